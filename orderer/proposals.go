package orderer

import (
	"cmp"
	"slices"
	"time"
)

// proposals tracks a Raft member's own block proposals from the moment
// raft took them until they are applied, abandoned with their term, or
// expired. Stream mode's loop counts them in flight (the Raft loop hands
// each count it forgets to Orderer.released), and the applied ones time
// Metrics.ProposalLatency. Pure: no clock, no I/O; time is an argument.
// Raft loop only.
//
// Identity: an entry is this member's own when its proposer is this
// member and its (term, seq) matches a tracked one. A proposal made in an
// older term may still commit under a new leader, but it is no longer
// tracked once the term moved on: newTerm forgot it and released its
// count, so it must not be released twice.
//
// Orphans. A proposal made as leader is in the leader's own log at its
// term the moment raft takes it. If the term moves on (or the proposal
// expires) before it is applied, its fate is open: the next leader may
// hold the entry and commit it, or overwrite it. This member learns
// which for certain when it applies an entry of a later term: terms never
// decrease along a Raft log, so an own entry of term T that was not
// applied before an entry of term T' > T is in no committed log and never
// will be. Such a proposal stays here as an orphan, with its batch, until
// then: applied, it is forgotten; passed over, lost hands its batch back
// to be proposed again. So a leader that loses its leadership but not its
// life (a slow fsync, a partition that heals) loses none of the
// transactions it had proposed, and none is ordered twice by it.
// A proposal made as follower (raft forwards it to the leader as MsgProp,
// appended at whatever term the leader has when it arrives) gives no such
// certainty and is only tracked; clients resubmit what it loses.
type proposals struct {
	term    uint64 // the term of the tracked proposals
	seq     uint64 // the last sequence number handed out
	at      map[uint64]proposal
	orphans map[orphanKey]orphan
}

// proposal is one tracked proposal: when raft took it and, if it was
// made as leader, its batch (kept for orphanhood).
type proposal struct {
	at   time.Time
	lead *batch
}

type orphanKey struct{ term, seq uint64 }

type orphan struct {
	at time.Time // when it was proposed
	b  batch
}

func newProposals(term uint64) proposals {
	return proposals{term: term, at: map[uint64]proposal{}, orphans: map[orphanKey]orphan{}}
}

// next returns the term and sequence number to encode in the next
// proposal.
func (p *proposals) next() (term, seq uint64) {
	p.seq++
	return p.term, p.seq
}

// made records that raft took proposal seq at now; lead is its batch if
// this member proposed it as leader of the tracked term, nil otherwise.
func (p *proposals) made(seq uint64, now time.Time, lead *batch) {
	p.at[seq] = proposal{at: now, lead: lead}
}

// applied forgets the proposal (term, seq), applied at now, and returns
// how long it took; false if it is not tracked (an orphan applied is
// forgotten too, and also answers false: its count went with its term).
func (p *proposals) applied(term, seq uint64, now time.Time) (time.Duration, bool) {
	if term != p.term {
		delete(p.orphans, orphanKey{term, seq})
		return 0, false
	}
	pr, ok := p.at[seq]
	if !ok {
		delete(p.orphans, orphanKey{term, seq})
		return 0, false
	}
	delete(p.at, seq)
	return now.Sub(pr.at), true
}

// newTerm forgets every tracked proposal if term is a new one (those
// made as leader become orphans), and returns how many it forgot.
func (p *proposals) newTerm(term uint64) int {
	if term == p.term {
		return 0
	}
	n := len(p.at)
	for seq, pr := range p.at {
		p.orphan(seq, pr)
	}
	clear(p.at)
	p.term = term
	return n
}

// orphan keeps pr, proposal seq of the tracked term, as an orphan if it
// was made as leader.
func (p *proposals) orphan(seq uint64, pr proposal) {
	if pr.lead != nil {
		p.orphans[orphanKey{p.term, seq}] = orphan{at: pr.at, b: *pr.lead}
	}
}

// forget forgets every tracked proposal and every orphan, and returns how
// many proposals were tracked.
func (p *proposals) forget() int {
	n := len(p.at)
	clear(p.at)
	p.forgetOrphans()
	return n
}

// forgetOrphans forgets the orphans: their fate can no longer be learned
// (a snapshot moved the apply position past them).
func (p *proposals) forgetOrphans() { clear(p.orphans) }

// expire forgets the proposals older than limit at now (raft lost them:
// a forwarded proposal dropped on the way; one made as leader becomes an
// orphan) and returns how many. Orphans older than orphanLimit are
// forgotten: their member never learned their fate (it was cut off).
func (p *proposals) expire(now time.Time, limit, orphanLimit time.Duration) int {
	n := 0
	for s, pr := range p.at {
		if now.Sub(pr.at) > limit {
			p.orphan(s, pr)
			delete(p.at, s)
			n++
		}
	}
	for k, o := range p.orphans {
		if now.Sub(o.at) > orphanLimit {
			delete(p.orphans, k)
		}
	}
	return n
}

// lost forgets and returns, in the order they were proposed, the orphans
// that an applied entry of term can no longer be followed by: those of
// an older term.
func (p *proposals) lost(term uint64) []batch {
	if len(p.orphans) == 0 { // the common case; lost runs for every applied entry
		return nil
	}
	var keys []orphanKey
	for k := range p.orphans {
		if k.term < term {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.SortFunc(keys, func(a, b orphanKey) int {
		if c := cmp.Compare(a.term, b.term); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	out := make([]batch, len(keys))
	for i, k := range keys {
		out[i] = p.orphans[k].b
		delete(p.orphans, k)
	}
	return out
}

// len is the number of tracked proposals (orphans are not in flight).
func (p *proposals) len() int { return len(p.at) }

// orphaned is the number of orphans.
func (p *proposals) orphaned() int { return len(p.orphans) }
