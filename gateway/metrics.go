package gateway

import (
	"fmt"
	"sync/atomic"
)

// Metrics is a snapshot of a gateway's counters.
type Metrics struct {
	Evaluate, EvaluateRefused                                uint64
	Endorse, EndorseRefused, EndorseRetried, EndorseFailover uint64 // retried: endorsers disagreed; failover: a remote peer failed
	Submit, SubmitRefused, SubmitFailover                    uint64
	CommitStatus, CommitTimeouts                             uint64
	BlockStreams, BlocksSent, Lagged                         uint64 // lagged: subscriptions cut off and resumed
}

// String formats the snapshot on one line.
func (m Metrics) String() string {
	return fmt.Sprintf("evaluate %d (refused %d) endorse %d (refused %d, retried %d, failover %d) "+
		"submit %d (refused %d, failover %d) commit-status %d (timed out %d) block-streams %d blocks-sent %d lagged %d",
		m.Evaluate, m.EvaluateRefused, m.Endorse, m.EndorseRefused, m.EndorseRetried, m.EndorseFailover,
		m.Submit, m.SubmitRefused, m.SubmitFailover, m.CommitStatus, m.CommitTimeouts, m.BlockStreams, m.BlocksSent, m.Lagged)
}

type counters struct {
	evaluate, evaluateRefused                                atomic.Uint64
	endorse, endorseRefused, endorseRetried, endorseFailover atomic.Uint64
	submit, submitRefused, submitFailover                    atomic.Uint64
	commitStatus, commitTimeouts                             atomic.Uint64
	blockStreams, blocksSent, lagged                         atomic.Uint64
}

func (c *counters) snapshot() Metrics {
	return Metrics{
		Evaluate: c.evaluate.Load(), EvaluateRefused: c.evaluateRefused.Load(),
		Endorse: c.endorse.Load(), EndorseRefused: c.endorseRefused.Load(),
		EndorseRetried: c.endorseRetried.Load(), EndorseFailover: c.endorseFailover.Load(),
		Submit: c.submit.Load(), SubmitRefused: c.submitRefused.Load(), SubmitFailover: c.submitFailover.Load(),
		CommitStatus: c.commitStatus.Load(), CommitTimeouts: c.commitTimeouts.Load(),
		BlockStreams: c.blockStreams.Load(), BlocksSent: c.blocksSent.Load(), Lagged: c.lagged.Load(),
	}
}
