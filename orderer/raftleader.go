package orderer

import (
	"fmt"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The Raft loop's account of leaders: who leads, why it changed, and
// transfers.

// leadership records and logs a change of leader: the previous leader,
// the new one, the term and, as far as this member can tell, why.
func (r *raftNode) leadership(ss *raft.SoftState) {
	if ss.Lead == r.lead {
		return
	}
	prev, prevTerm := r.lead, r.leadTerm
	term := r.rn.BasicStatus().GetTerm()
	why := r.leaderChangeCause(ss, prev, prevTerm, term)
	if prev == raft.None { // between leaders: name the last one
		prev, prevTerm = r.lastLead, r.lastLeadTerm
	}
	r.lead, r.leadTerm = ss.Lead, term
	if ss.Lead != raft.None {
		r.lastLead, r.lastLeadTerm = ss.Lead, term
	}
	r.leader.Store(ss.Lead)
	r.o.m.leaderChanges.Add(1)
	r.o.cfg.Log.Info("raft leader changed", "channel", r.o.cfg.Channel, "raft_id", r.cfg.ID,
		"previous", prev, "previous_name", r.name(prev), "leader", ss.Lead, "leader_name", r.name(ss.Lead),
		"term", term, "state", ss.RaftState.String(), "why", why)
}

// Causes of a leader change, as leaderChangeCause names them.
const (
	causeTransfer    = "leader transfer"
	causeCheckQuorum = "check-quorum: the leader did not hear from a quorum within an election timeout and stepped down"
	causeTimeout     = "election timeout: no heartbeat from the leader within an election timeout"
	causeElsewhere   = "another orderer's election timeout started an election"
)

// leaderChangeCause says why the leader changed from prev (leader in
// prevTerm) to ss.Lead in term. r.cause holds what the loop saw on the
// way: a vote request or MsgTimeoutNow of a leader transfer, or the
// cause recorded when the leader was lost; it is consumed once a new
// leader is known.
func (r *raftNode) leaderChangeCause(ss *raft.SoftState, prev, prevTerm, term uint64) string {
	if ss.Lead == raft.None {
		switch {
		case r.cause != "":
		case prev == r.cfg.ID && term == prevTerm:
			r.cause = causeCheckQuorum
		case ss.RaftState == raft.StatePreCandidate || ss.RaftState == raft.StateCandidate:
			r.cause = causeTimeout
		default:
			r.cause = causeElsewhere
		}
		return r.cause
	}
	why := r.cause
	r.cause = ""
	switch {
	case why == causeTransfer:
		return causeTransfer + ": elected at the previous leader's request"
	case why != "":
		return "elected after " + why
	case prev == raft.None && r.lastLead == raft.None:
		return "first leader this orderer has heard of since it started"
	case prev == raft.None:
		return "a new leader after an election"
	}
	return fmt.Sprintf("heard from the leader of term %d, elected after the term %d of leader %d ended", term, prevTerm, prev)
}

// noteCause records, before raft steps m, a message that tells why the
// leader is about to change: a leader transfer shows as MsgTimeoutNow at
// the transferee and as vote requests with the transfer context at
// everyone else.
func (r *raftNode) noteCause(m *pb.Message) {
	switch m.GetType() {
	case pb.MessageType_MsgTimeoutNow:
		r.cause = causeTransfer
	case pb.MessageType_MsgVote:
		if string(m.GetContext()) == campaignTransfer && m.GetTerm() > r.term.Load() {
			r.cause = causeTransfer
		}
	}
}

// campaignTransfer is the context etcd raft puts on the vote requests of
// an election that a leader transfer started (raft.campaignTransfer).
const campaignTransfer = "CampaignTransfer"

func (r *raftNode) name(id uint64) string {
	if p, ok := r.conf.peer(id); ok {
		return p.Org + "/" + p.Name
	}
	if p, ok := r.cfg.joinPeer(id); ok {
		return p.Org + "/" + p.Name
	}
	return ""
}

// transfer starts a leader transfer to member to (TransferLeader).
func (r *raftNode) transfer(to uint64) error {
	switch {
	case r.lead == raft.None:
		return fmt.Errorf("%w: transfer leader to %d: no leader is known now; retry", ErrUnavailable, to)
	case r.lead == to:
		return nil
	}
	r.rn.TransferLeader(to)
	return nil
}

// memberList names the members for messages: "1 (Org/name), 2 (...)".
func (r *raftNode) memberList() string { return r.confView.Load().names() }
