package orderer

import (
	"bytes"

	"go.etcd.io/raft/v3"
	raftquorum "go.etcd.io/raft/v3/quorum"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"
)

// Quiescence: a Raft group with nothing to do stops ticking, so an idle
// channel sends no heartbeats (each member of an idle 3-orderer channel
// spent about 500 ms of CPU a minute on them; an orderer may order many
// channels). CockroachDB quiesces its ranges the same way.
//
// The rules, all on the run loop:
//   - The leader quiesces after quiesceAfter ticks in which the group was
//     settled (settled: every member's log matches the leader's, all of
//     it committed and applied here, no proposal or config change in
//     flight, no leader transfer). It sends each follower one heartbeat
//     whose context is quiesceCtx, then stops calling Tick
//     (and its ticker: a quiesced member's loop does not wake at all).
//   - A follower that steps such a heartbeat from its leader, with
//     nothing of its own in flight, stops calling Tick as well. Stepping
//     it reset the follower's election timer, so it wakes with a full
//     election timeout ahead.
//   - Anything else wakes a member: a Raft message other than a quiesce
//     heartbeat or its answer, a proposal, a transport report, a leader
//     transfer, the end of another member's stream to this one, and a
//     submission this member could not hand to a leader (none known, or
//     the forward failed: Orderer.route). Woken, it ticks again; the
//     leader's next heartbeat wakes the followers.
//
// Liveness: the leader keeps a stream open to each follower once it has
// sent on it (the quiesce heartbeat did). A leader that dies or is cut
// off while its group is quiesced ends those streams (the kernel closes
// a killed process's sockets; keepalives find a dead connection), which
// wakes the followers: they elect a new leader as if they had never
// slept. Should a stream outlive its leader regardless, the first
// submission to a follower wakes it (its forward fails). A follower
// that dies wakes the leader the same way, and a group with a member
// behind or unreachable does not quiesce.
//
// Safety does not depend on any of this: quiescence only withholds
// Tick, which raft allows (a member that does not tick neither times out
// nor heartbeats; it still steps every message and proposal).

// quiesceCtx marks the heartbeat that quiesces a follower and its answer
// (raft echoes a heartbeat's context in the response). raft reads the
// first 8 bytes of a heartbeat answer's context as a little-endian count
// of ReadIndex requests acknowledged (read_only.go): they are zero here,
// which acknowledges nothing (strand does not use ReadIndex anyway).
var quiesceCtx = append(make([]byte, 8), "strand-quiesce"...)

// quiesceAfter is how many settled ticks the leader waits before
// quiescing: an election timeout's worth by default, so a group under
// load, between two blocks, never quiesces.
func (r *raftNode) quiesceAfter() int { return r.cfg.ElectionTicks }

// isQuiesce reports whether m is a quiesce heartbeat or its answer.
func isQuiesce(m *pb.Message) bool {
	t := m.GetType()
	return (t == pb.MessageType_MsgHeartbeat || t == pb.MessageType_MsgHeartbeatResp) && bytes.Equal(m.GetContext(), quiesceCtx)
}

// tick is the loop's ticker case: Tick unless quiesced. The leader
// counts the ticks that find its group settled (checked before Tick,
// whose heartbeats would make a Ready) and quiesces instead of ticking
// at the quiesceAfter-th.
func (r *raftNode) tick() {
	if r.quiesced {
		return
	}
	if st, ok := r.settled(); !ok {
		r.settledTicks = 0
	} else if r.settledTicks++; r.settledTicks >= r.quiesceAfter() {
		r.quiesce(st)
		return
	}
	r.rn.Tick()
}

// settled reports whether this member leads a group with nothing in
// flight (see the rules above), and the status it read.
func (r *raftNode) settled() (raft.Status, bool) {
	if r.lead != r.cfg.ID || r.inflight.len() > 0 || len(r.held) > 0 || r.rn.HasReady() {
		return raft.Status{}, false
	}
	st := r.rn.Status()
	if st.RaftState != raft.StateLeader || st.LeadTransferee != raft.None || st.Applied != st.GetCommit() || len(st.Progress) < 2 {
		return st, false
	}
	// Every reachable member holds the whole log, all of it committed
	// (the leader's own Match is its last index), and they are a quorum
	// of the voters. An unreachable one (its last send failed) will wake
	// the group when it comes back: it campaigns, or it is sent to.
	holding := map[uint64]bool{}
	for id, pr := range st.Progress {
		// Replicate only: raft answers a probing member's heartbeat
		// response with an append, which would wake the group again.
		if pr.Match == st.GetCommit() && pr.State == tracker.StateReplicate && !pr.IsPaused() {
			holding[id] = true
			continue
		}
		if l, ok := r.tr.link(id); id == r.cfg.ID || !ok || l.up.Load() {
			return st, false
		}
	}
	return st, st.Config.Voters.VoteResult(holding) == raftquorum.VoteWon
}

// quiesce sends each other member the quiesce heartbeat and stops
// ticking.
func (r *raftNode) quiesce(st raft.Status) {
	for id, pr := range st.Progress {
		if id != r.cfg.ID {
			// As raft's own heartbeats: never a commit index beyond what
			// the member is known to hold (it would panic there).
			r.tr.send(&pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), To: proto.Uint64(id), From: proto.Uint64(r.cfg.ID),
				Term: proto.Uint64(st.GetTerm()), Commit: proto.Uint64(min(pr.Match, st.GetCommit())), Context: quiesceCtx})
		}
	}
	r.setQuiesced(true)
}

// stepped is called after the loop stepped m: a quiesce heartbeat from
// the leader quiesces a follower with nothing in flight; any other
// message but a quiesce answer wakes this member.
func (r *raftNode) stepped(m *pb.Message) {
	switch {
	case !isQuiesce(m):
		r.wake()
	case m.GetType() == pb.MessageType_MsgHeartbeat && m.GetFrom() == r.rn.BasicStatus().Lead && r.inflight.len() == 0 && len(r.held) == 0:
		r.setQuiesced(true)
	}
}

// wake makes a quiesced member tick again, counting settled ticks from
// zero. (Messages that an awake group exchanges, heartbeats and their
// answers among them, leave the count alone: settled judges activity.)
func (r *raftNode) wake() {
	if r.quiesced {
		r.settledTicks = 0
		r.setQuiesced(false)
	}
}

func (r *raftNode) setQuiesced(q bool) {
	if q == r.quiesced {
		return
	}
	r.quiesced = q
	r.quiescedNow.Store(q)
	if q {
		r.o.m.quiesces.Add(1)
		r.ticker.Stop()
		return
	}
	r.ticker.Reset(r.cfg.TickInterval)
}

// wakeUp asks the loop to wake (another goroutine: Orderer.route).
func (r *raftNode) wakeUp() {
	select {
	case r.wakes <- struct{}{}:
	default: // a wake is pending already
	}
}
