package gateway

import (
	"fmt"
	"sync/atomic"

	"github.com/strand-ledger/strand/internal/latency"
)

// Metrics is a snapshot of a gateway's counters.
type Metrics struct {
	Evaluate, EvaluateRefused                                uint64
	Endorse, EndorseRefused, EndorseRetried, EndorseFailover uint64 // retried: endorsers disagreed; failover: a remote peer failed
	Submit, SubmitRefused, SubmitFailover                    uint64
	SubmitRetried                                            uint64 // every orderer answered 503 (no Raft leader): asked again
	Resubmitted                                              uint64 // admitted transactions sent again, not committed by their deadline (see resubmit)
	CommitStatus, CommitTimeouts                             uint64
	BlockStreams, BlocksSent, Lagged                         uint64 // lagged: subscriptions cut off and resumed
	Overloaded                                               uint64 // endorse and submit calls answered 429: too many in flight
	InFlight                                                 uint64 // transactions submitted here, not yet committed here
	HeightReports                                            uint64 // the peer's heights told to the orderer after commits (Config.ReportHeights)

	// Per-phase latency of the calls that succeeded: Endorse (gathering
	// every org's endorsement), Order (Submit until an orderer admitted
	// the transaction, retries included) and Commit (CommitStatus, or
	// Submit's wait_commit, until the transaction committed on this peer).
	EndorseLatency, OrderLatency, CommitLatency latency.Snapshot
}

// String formats the snapshot on one line.
func (m Metrics) String() string {
	return fmt.Sprintf("evaluate %d (refused %d) endorse %d (refused %d, retried %d, failover %d) "+
		"submit %d (refused %d, failover %d, retried %d, resubmitted %d) commit-status %d (timed out %d) block-streams %d blocks-sent %d lagged %d overloaded %d in-flight %d height-reports %d",
		m.Evaluate, m.EvaluateRefused, m.Endorse, m.EndorseRefused, m.EndorseRetried, m.EndorseFailover,
		m.Submit, m.SubmitRefused, m.SubmitFailover, m.SubmitRetried, m.Resubmitted, m.CommitStatus, m.CommitTimeouts, m.BlockStreams, m.BlocksSent, m.Lagged, m.Overloaded, m.InFlight, m.HeightReports)
}

type counters struct {
	evaluate, evaluateRefused                                atomic.Uint64
	endorse, endorseRefused, endorseRetried, endorseFailover atomic.Uint64
	submit, submitRefused, submitFailover, submitRetried     atomic.Uint64
	resubmitted                                              atomic.Uint64
	commitStatus, commitTimeouts                             atomic.Uint64
	blockStreams, blocksSent, lagged                         atomic.Uint64
	overloaded, heightReports                                atomic.Uint64
	endorseLatency, orderLatency, commitLatency              latency.Histogram
}

func (c *counters) snapshot() Metrics {
	return Metrics{
		Evaluate: c.evaluate.Load(), EvaluateRefused: c.evaluateRefused.Load(),
		Endorse: c.endorse.Load(), EndorseRefused: c.endorseRefused.Load(),
		EndorseRetried: c.endorseRetried.Load(), EndorseFailover: c.endorseFailover.Load(),
		Submit: c.submit.Load(), SubmitRefused: c.submitRefused.Load(), SubmitFailover: c.submitFailover.Load(), SubmitRetried: c.submitRetried.Load(),
		Resubmitted:  c.resubmitted.Load(),
		CommitStatus: c.commitStatus.Load(), CommitTimeouts: c.commitTimeouts.Load(),
		BlockStreams: c.blockStreams.Load(), BlocksSent: c.blocksSent.Load(), Lagged: c.lagged.Load(),
		Overloaded: c.overloaded.Load(), HeightReports: c.heightReports.Load(),
		EndorseLatency: c.endorseLatency.Snapshot(), OrderLatency: c.orderLatency.Snapshot(), CommitLatency: c.commitLatency.Snapshot(),
	}
}
