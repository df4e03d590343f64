package orderer

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/internal/latency"
	"github.com/strand-ledger/strand/orderer/raftlog"
)

// Metrics is a snapshot of the orderer's activity since New.
type Metrics struct {
	Submitted   uint64  `metric:"counter"` // Submit calls.
	Admitted    uint64  `metric:"counter"` // Transactions admitted for ordering.
	Refused     Refused // submissions refused, by reason
	Queued      int     `metric:"gauge"`   // Admitted transactions waiting to be cut into a block now.
	QueuedBytes int64   `metric:"gauge"`   // Bytes of the admitted transactions waiting to be cut now.
	Height      uint64  `metric:"gauge"`   // Blocks in the orderer's block store.
	Blocks      uint64  `metric:"counter"` // Blocks persisted since the orderer started.
	Txs         uint64  `metric:"counter"` // Transactions in the blocks persisted since the orderer started.
	TxBytes     uint64  `metric:"counter"` // Transaction bytes in the blocks persisted since the orderer started.
	Appends     uint64  `metric:"counter"` // Block store appends: one fsync of a group of blocks each.
	// Fsyncs counts the block store's segment fsyncs since it was opened
	// (appends plus segment roll-overs).
	Fsyncs      uint64        `metric:"counter"`
	AppendTotal time.Duration `metric:"counter"` // Time spent appending blocks to the block store.
	Delivered   uint64        `metric:"counter"` // Blocks sent to peers by Deliver.
	// Paced counts the cuts a stream-mode orderer held because a peer was
	// behind (see "Pacing by the peers" in doc.go).
	Paced uint64 `metric:"counter"`
	// PacedToLimit counts the holds that lasted cut.PaceMaxHold: no report
	// said the peers caught up before it ran out.
	PacedToLimit uint64 `metric:"counter"`
	// ReportsRefused counts peers' height reports dropped because the
	// caller's TLS certificate is not of a peer of the channel (Report).
	ReportsRefused uint64 `metric:"counter"`
	Signed         uint64 `metric:"counter"` // Blocks this orderer signed: all, or the checkpoints.
	// MembersSeq is the number of membership updates (certificate
	// revocation lists) this orderer has applied from its chain, and
	// MembersUpdates those it applied since it started.
	MembersSeq     uint64 `metric:"gauge"`   // Membership updates (revocation lists) the channel has applied, as of this orderer.
	MembersUpdates uint64 `metric:"counter"` // Membership updates this orderer applied since it started.
	// Raft is the consensus side of a cluster member; nil for a single
	// node.
	Raft *RaftMetrics
}

// RaftMetrics is a snapshot of a Raft member's consensus activity.
type RaftMetrics struct {
	ID            uint64 `metric:"gauge"`   // This member's Raft id.
	Leader        uint64 `metric:"gauge"`   // The leader's Raft id as last known; 0 if none.
	Term          uint64 `metric:"gauge"`   // The Raft term.
	Commit        uint64 `metric:"gauge"`   // The Raft commit index.
	Applied       uint64 `metric:"gauge"`   // The Raft applied index.
	LeaderChanges uint64 `metric:"counter"` // Leader changes this member saw.
	Proposals     uint64 `metric:"counter"` // Batches proposed to Raft (this member's cuts, as leader).
	Dropped       uint64 `metric:"counter"` // Proposals Raft refused (no leader): their clients resubmit.
	Retried       uint64 `metric:"counter"` // Batches this member proposed as leader, lost with its term, and proposed again.
	// Proposals of this member applied.
	ProposalsApplied uint64 `metric:"counter"`
	// Time from proposal to apply of this member's own proposals (Raft
	// replication plus the log fsyncs), summed.
	ProposalLatency time.Duration `metric:"counter"`
	// The longest time from proposal to apply of this member's proposals.
	ProposalLatencyMax time.Duration `metric:"gauge"`
	// Distribution of the time from proposal to apply of this member's
	// own proposals: Raft replication plus the log fsyncs.
	Proposal     latency.Snapshot
	ForwardedOut uint64 `metric:"counter"` // Transactions this follower forwarded to the leader.
	ForwardedIn  uint64 `metric:"counter"` // Transactions the leader took from followers.
	SendErrors   uint64 `metric:"counter"` // Failed sends to other members.
	SendDropped  uint64 `metric:"counter"` // Messages dropped because a member's send queue was full.
	Refused      uint64 `metric:"counter"` // Callers, messages and fetched blocks refused, all kinds.
	// RefusedBy counts refusals by kind: not_member (the TLS certificate
	// is no member orderer), wrong_sender (a message's From or To),
	// malformed (bytes that do not decode), bad_block (a catch-up block
	// that is not the next one, breaks the hash chain, or lacks an
	// orderer's valid signature).
	RefusedBy     map[string]uint64 `metric:"counter,key=kind"`
	StaleTerm     uint64            `metric:"counter"` // Messages of an older term (stepped: Raft answers them with its term).
	Snapshots     uint64            `metric:"counter"` // Raft log compactions here.
	SnapshotsIn   uint64            `metric:"counter"` // Raft snapshots installed from the leader.
	CatchUpBlocks uint64            `metric:"counter"` // Blocks fetched from other members to catch up.
	Quiesced      bool              `metric:"gauge"`   // Whether this member's Raft group is quiesced: idle, no ticks, no heartbeats.
	Quiesces      uint64            `metric:"counter"` // Times this member's Raft group went quiet.
	MessagesOut   uint64            `metric:"counter"` // Raft messages this member sent.
	WAL           raftlog.Stats     // the Raft log's disk activity
	// ConfigSeq is the number of config updates the channel has applied
	// (as of this member), Orderers the size of its orderer set, and
	// ConfigUpdates the updates this member applied since it started.
	ConfigSeq     uint64 `metric:"gauge"`   // Config updates the channel has applied, as of this member.
	Orderers      int    `metric:"gauge"`   // Orderers in this member's orderer set.
	ConfigUpdates uint64 `metric:"counter"` // Config updates this member applied since it started.
}

// String renders the Raft metrics on one line.
func (r RaftMetrics) String() string {
	var avg time.Duration
	if r.ProposalsApplied > 0 {
		avg = r.ProposalLatency / time.Duration(r.ProposalsApplied)
	}
	return fmt.Sprintf("raft node %d: leader %d, term %d, commit %d, applied %d, %d leader changes; %d proposals (%d applied, avg %s, p99 ≤%s, max %s, %d dropped, %d retried); "+
		"forwarded %d out, %d in; %d send errors, %d dropped; %d refused, %d stale; %d snapshots, %d installed, %d blocks fetched; wal: %s",
		r.ID, r.Leader, r.Term, r.Commit, r.Applied, r.LeaderChanges, r.Proposals, r.ProposalsApplied, avg, r.Proposal.Quantile(0.99), r.ProposalLatencyMax, r.Dropped, r.Retried,
		r.ForwardedOut, r.ForwardedIn, r.SendErrors, r.SendDropped, r.Refused, r.StaleTerm, r.Snapshots, r.SnapshotsIn, r.CatchUpBlocks, r.WAL)
}

// Refused counts refused Submit calls by reason.
type Refused struct {
	// Submissions refused, by reason: malformed (400), wrong_channel
	// (404), forbidden (403: unknown org, bad certificate, wrong role,
	// expired, bad signature), overloaded (429), closed (503: closed or
	// failed), unavailable (503: no Raft leader, or it is unreachable),
	// context (the caller gave up).
	Malformed    uint64 `metric:"counter,family=,reason=malformed"`
	WrongChannel uint64 `metric:"counter,family=,reason=wrong_channel"` // 404
	Forbidden    uint64 `metric:"counter,family=,reason=forbidden"`     // 403: unknown org, bad certificate, wrong role, expired, bad signature
	Overloaded   uint64 `metric:"counter,family=,reason=overloaded"`    // 429
	Closed       uint64 `metric:"counter,family=,reason=closed"`        // 503: closed or failed
	Unavailable  uint64 `metric:"counter,family=,reason=unavailable"`   // 503: Raft: no leader, or the leader unreachable
	Context      uint64 `metric:"counter,family=,reason=context"`       // the caller's context was done
}

// Total returns the number of refusals.
func (r Refused) Total() uint64 {
	return r.Malformed + r.WrongChannel + r.Forbidden + r.Overloaded + r.Closed + r.Unavailable + r.Context
}

// AvgBlockTxs returns the mean transactions per block (0 if none).
func (m Metrics) AvgBlockTxs() float64 {
	if m.Blocks == 0 {
		return 0
	}
	return float64(m.Txs) / float64(m.Blocks)
}

// BlocksPerAppend returns the mean group size: blocks per fsync (0 if none).
func (m Metrics) BlocksPerAppend() float64 {
	if m.Appends == 0 {
		return 0
	}
	return float64(m.Blocks) / float64(m.Appends)
}

// String renders the metrics on one line.
func (m Metrics) String() string {
	var avgAppend time.Duration
	var avgBytes uint64
	if m.Appends > 0 {
		avgAppend = m.AppendTotal / time.Duration(m.Appends)
	}
	if m.Blocks > 0 {
		avgBytes = m.TxBytes / m.Blocks
	}
	r := m.Refused
	s := fmt.Sprintf("submitted %d, admitted %d, refused %d (malformed %d, wrong channel %d, forbidden %d, overloaded %d, closed %d, unavailable %d, context %d); "+
		"queued %d; height %d; %d blocks of %d txs (avg %.1f txs, %d B), %d signed; %d appends (%.1f blocks each, avg %s), %d fsyncs; %d blocks delivered",
		m.Submitted, m.Admitted, r.Total(), r.Malformed, r.WrongChannel, r.Forbidden, r.Overloaded, r.Closed, r.Unavailable, r.Context,
		m.Queued, m.Height, m.Blocks, m.Txs, m.AvgBlockTxs(), avgBytes, m.Signed, m.Appends, m.BlocksPerAppend(), avgAppend, m.Fsyncs, m.Delivered)
	if m.Raft != nil {
		s += "; " + m.Raft.String()
	}
	return s
}

// counters are the live metrics.
type counters struct {
	submitted, admitted                                atomic.Uint64
	refusedMalformed, refusedChannel, refusedForbidden atomic.Uint64
	refusedOverloaded, refusedClosed, refusedCtx       atomic.Uint64
	blocks, txs, txBytes, appends, delivered, paced    atomic.Uint64
	pacedToLimit, reportsRefused                       atomic.Uint64
	appendNanos                                        atomic.Int64
	refusedUnavailable                                 atomic.Uint64
	signed                                             atomic.Uint64

	// Raft
	leaderChanges, proposals, proposalsDropped, proposalsApplied atomic.Uint64
	proposalsRetried                                             atomic.Uint64
	proposalNanos, proposalMax                                   atomic.Int64
	proposalHist                                                 latency.Histogram
	forwardedOut, forwardedIn                                    atomic.Uint64
	raftSendErrors, raftDropped, raftStale                       atomic.Uint64
	raftRefused                                                  [nRefusals]atomic.Uint64
	snapshots, snapshotsIn, catchUpBlocks                        atomic.Uint64
	quiesces, raftSent                                           atomic.Uint64
	configUpdates                                                atomic.Uint64
	membersUpdates                                               atomic.Uint64
}

func (c *counters) proposalLatency(d time.Duration) {
	c.proposalsApplied.Add(1)
	c.proposalHist.Record(d)
	c.proposalNanos.Add(int64(d))
	for {
		m := c.proposalMax.Load()
		if int64(d) <= m || c.proposalMax.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

func (c *counters) refused(k refusal) { c.raftRefused[k].Add(1) }

func (c *counters) persisted(blocks, txs, txBytes int, took time.Duration) {
	c.blocks.Add(uint64(blocks))
	c.txs.Add(uint64(txs))
	c.txBytes.Add(uint64(txBytes))
	c.appends.Add(1)
	c.appendNanos.Add(int64(took))
}

// Metrics returns a snapshot of the orderer's metrics.
func (o *Orderer) Metrics() Metrics {
	c := &o.m
	return Metrics{
		Submitted: c.submitted.Load(),
		Admitted:  c.admitted.Load(),
		Refused: Refused{
			Malformed: c.refusedMalformed.Load(), WrongChannel: c.refusedChannel.Load(), Forbidden: c.refusedForbidden.Load(),
			Overloaded: c.refusedOverloaded.Load(), Closed: c.refusedClosed.Load(), Context: c.refusedCtx.Load(),
			Unavailable: c.refusedUnavailable.Load(),
		},
		Queued:         len(o.in),
		QueuedBytes:    o.inBytes.Load(),
		Height:         o.cfg.Store.Height(),
		Blocks:         c.blocks.Load(),
		Txs:            c.txs.Load(),
		TxBytes:        c.txBytes.Load(),
		Appends:        c.appends.Load(),
		Fsyncs:         o.cfg.Store.Stats().Fsyncs,
		AppendTotal:    time.Duration(c.appendNanos.Load()),
		Delivered:      c.delivered.Load(),
		Paced:          c.paced.Load(),
		PacedToLimit:   c.pacedToLimit.Load(),
		ReportsRefused: c.reportsRefused.Load(),
		Signed:         c.signed.Load(),
		MembersSeq:     o.cfg.Registry.Revocations().Sequence(),
		MembersUpdates: c.membersUpdates.Load(),
		Raft:           o.raftMetrics(),
	}
}

func (o *Orderer) raftMetrics() *RaftMetrics {
	r := o.raft
	if r == nil {
		return nil
	}
	c := &o.m
	conf := r.confView.Load()
	by, total := make(map[string]uint64, nRefusals), uint64(0)
	for k := range nRefusals {
		n := c.raftRefused[k].Load()
		by[k.String()], total = n, total+n
	}
	return &RaftMetrics{Refused: total, RefusedBy: by,
		ID: r.cfg.ID, Leader: r.leader.Load(), Term: r.term.Load(), Commit: r.commit.Load(), Applied: r.applied.Load(),
		LeaderChanges: c.leaderChanges.Load(), Proposals: c.proposals.Load(), Dropped: c.proposalsDropped.Load(),
		Retried:          c.proposalsRetried.Load(),
		ProposalsApplied: c.proposalsApplied.Load(), ProposalLatency: time.Duration(c.proposalNanos.Load()),
		ProposalLatencyMax: time.Duration(c.proposalMax.Load()), Proposal: c.proposalHist.Snapshot(),
		ForwardedOut: c.forwardedOut.Load(), ForwardedIn: c.forwardedIn.Load(),
		SendErrors: c.raftSendErrors.Load(), SendDropped: c.raftDropped.Load(), StaleTerm: c.raftStale.Load(),
		Snapshots: c.snapshots.Load(), SnapshotsIn: c.snapshotsIn.Load(), CatchUpBlocks: c.catchUpBlocks.Load(),
		Quiesced: r.quiescedNow.Load(), Quiesces: c.quiesces.Load(), MessagesOut: c.raftSent.Load(),
		WAL: r.log.Stats(), ConfigSeq: conf.Seq, Orderers: len(conf.Peers), ConfigUpdates: c.configUpdates.Load(),
	}
}
