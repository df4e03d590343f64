package orderer

import "time"

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
type proposals struct {
	term uint64 // the term of the tracked proposals
	seq  uint64 // the last sequence number handed out
	at   map[uint64]time.Time
}

func newProposals(term uint64) proposals {
	return proposals{term: term, at: map[uint64]time.Time{}}
}

// next returns the term and sequence number to encode in the next
// proposal.
func (p *proposals) next() (term, seq uint64) {
	p.seq++
	return p.term, p.seq
}

// made records that raft took proposal seq at now.
func (p *proposals) made(seq uint64, now time.Time) { p.at[seq] = now }

// applied forgets the proposal (term, seq), applied at now, and returns
// how long it took; false if it is not tracked.
func (p *proposals) applied(term, seq uint64, now time.Time) (time.Duration, bool) {
	if term != p.term {
		return 0, false
	}
	t, ok := p.at[seq]
	if !ok {
		return 0, false
	}
	delete(p.at, seq)
	return now.Sub(t), true
}

// newTerm forgets every tracked proposal if term is a new one, and
// returns how many it forgot.
func (p *proposals) newTerm(term uint64) int {
	if term == p.term {
		return 0
	}
	p.term = term
	return p.forget()
}

// forget forgets every tracked proposal and returns how many.
func (p *proposals) forget() int {
	n := len(p.at)
	clear(p.at)
	return n
}

// expire forgets the proposals older than limit at now (raft lost them:
// a forwarded proposal dropped on the way) and returns how many.
func (p *proposals) expire(now time.Time, limit time.Duration) int {
	n := 0
	for s, t := range p.at {
		if now.Sub(t) > limit {
			delete(p.at, s)
			n++
		}
	}
	return n
}

// len returns the number tracked.
func (p *proposals) len() int { return len(p.at) }
