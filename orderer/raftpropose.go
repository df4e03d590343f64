package orderer

import (
	"errors"
	"time"

	"go.etcd.io/raft/v3"
)

// Proposing: cut batches go into raft, or wait while raft refuses them;
// proposals.go tracks them until applied.

// propose hands a cut batch to raft. A batch raft refuses while no leader
// is known or a leader transfer is under way is held and proposed once a
// leader is known (held, proposeHeld); one refused otherwise loses its
// transactions: their clients, who learn of commits from the peers,
// resubmit. One proposed as leader and lost with its term is proposed
// again (retryLost).
func (r *raftNode) propose(b batch) {
	if b.Config {
		r.proposeConfig(b)
		return
	}
	term, seq := r.inflight.next()
	data := encodeEntry(nil, blockEntry{Proposer: r.cfg.ID, Term: term, Seq: seq, batch: b})
	// As leader of the tracked term (r.lead and r.leadTerm are the last
	// Ready's, and every Ready is handled before a proposal), raft appends
	// it to this log at that term: kept, so that it can be proposed again
	// if the term ends without it (orphans, proposals.go).
	var lead *batch
	if r.lead == r.cfg.ID && r.leadTerm == term {
		lead = &b
	}
	if err := r.rn.Propose(data); err != nil {
		if errors.Is(err, raft.ErrProposalDropped) && r.mustHold() {
			r.held = append(r.held, b) // see held
			return
		}
		r.o.m.proposalsDropped.Add(1)
		r.o.cfg.Log.Warn("raft: proposal dropped; its clients must resubmit", "channel", r.o.cfg.Channel, "raft_id", r.cfg.ID,
			"txs", len(b.Txs), "err", err)
		r.o.released(1)
		return
	}
	r.o.m.proposals.Add(1)
	r.inflight.made(seq, time.Now(), lead)
}

// retryLost takes back, as held batches, this member's orphans that an
// applied entry of term shows to be in no committed log (proposals.lost):
// proposeHeld proposes them again. Each is counted in flight again, as
// emit counted it the first time.
func (r *raftNode) retryLost(term uint64) {
	for _, b := range r.inflight.lost(term) {
		r.o.countInFlight()
		r.o.m.proposalsRetried.Add(1)
		r.o.cfg.Log.Info("raft: proposing again a batch lost when this orderer's term as leader ended", "channel", r.o.cfg.Channel,
			"raft_id", r.cfg.ID, "txs", len(b.Txs), "term", term)
		r.held = append(r.held, b)
	}
}

// mustHold reports whether raft refuses proposals for a while now: no
// leader is known (an election, or a leader change seen half-way), or
// this leader is transferring leadership.
func (r *raftNode) mustHold() bool {
	st := r.rn.BasicStatus()
	return st.Lead == raft.None || st.LeadTransferee != raft.None
}

// proposeHeld proposes the held batches once raft takes proposals again
// (a leader is known and no transfer is under way; raft aborts a transfer
// after an election timeout); as a follower, raft forwards them to the
// leader.
func (r *raftNode) proposeHeld() {
	if len(r.held) == 0 || r.mustHold() {
		return
	}
	held := r.held
	r.held = nil
	for _, b := range held {
		r.propose(b)
	}
}
