package gateway

import (
	"fmt"
	"sync/atomic"

	"github.com/strand-ledger/strand/internal/latency"
)

// Metrics is a snapshot of a gateway's counters.
type Metrics struct {
	// Evaluate calls (queries simulated on the local peer, not ordered).
	Evaluate uint64 `metric:"counter"`
	// Evaluate calls refused.
	EvaluateRefused uint64 `metric:"counter"`
	// Endorse calls (gathering every org's endorsement a policy needs).
	Endorse uint64 `metric:"counter"`
	// Endorse calls refused.
	EndorseRefused uint64 `metric:"counter"`
	// Endorsement rounds asked again: the endorsers disagreed or a peer was behind.
	EndorseRetried uint64 `metric:"counter"`
	// Endorsements asked of another peer of an org after one failed.
	EndorseFailover uint64 `metric:"counter"`
	// Submit calls (signed transactions sent to the ordering service).
	Submit uint64 `metric:"counter"`
	// Submit calls refused.
	SubmitRefused uint64 `metric:"counter"`
	// Submits sent to another orderer after one failed.
	SubmitFailover uint64 `metric:"counter"`
	// Submits asked again because every orderer answered 503 (no Raft leader).
	SubmitRetried uint64 `metric:"counter"`
	// Admitted transactions sent again, not committed by their deadline (a lost leader).
	Resubmitted uint64 `metric:"counter"`
	// CommitStatus calls.
	CommitStatus uint64 `metric:"counter"`
	// CommitStatus calls that timed out before their transaction committed.
	CommitTimeouts uint64 `metric:"counter"`
	// Block event streams served.
	BlockStreams uint64 `metric:"counter"`
	// Blocks sent on block event streams.
	BlocksSent uint64 `metric:"counter"`
	// Commit-event subscriptions cut off for lagging and resumed.
	Lagged uint64 `metric:"counter"`
	// Endorse and submit calls answered 429: too many transactions in flight.
	Overloaded uint64 `metric:"counter"`
	// Transactions submitted through this gateway and not yet committed on its peer.
	InFlight uint64 `metric:"gauge"`
	// Committed heights of the peer told to the orderer after commits (stream mode).
	HeightReports uint64 `metric:"counter"`

	// Latency of successful Endorse calls: gathering every org's endorsement.
	EndorseLatency latency.Snapshot
	// Latency of ordering: Submit until an orderer admitted the transaction, retries included.
	OrderLatency latency.Snapshot
	// Latency of commit: CommitStatus, or Submit's wait, until the transaction committed on this peer.
	CommitLatency latency.Snapshot
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
