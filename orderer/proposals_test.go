package orderer

import (
	"testing"
	"time"
)

// TestProposals walks the tracker through its life: proposals made,
// applied (with their latency), an entry of another term ignored, expiry
// by age, and a new term forgetting the rest, each count released once.
func TestProposals(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newProposals(5)
	term, s1 := p.next()
	p.made(s1, t0, nil)
	_, s2 := p.next()
	p.made(s2, t0.Add(time.Second), nil)
	_, s3 := p.next()
	p.made(s3, t0.Add(2*time.Second), nil)
	if term != 5 || s1 != 1 || s2 != 2 || s3 != 3 || p.len() != 3 {
		t.Fatalf("next gave term %d, seqs %d %d %d, %d tracked; want 5, 1 2 3, 3", term, s1, s2, s3, p.len())
	}
	if d, ok := p.applied(5, s1, t0.Add(30*time.Millisecond)); !ok || d != 30*time.Millisecond {
		t.Fatalf("applied(5, %d) = %v, %v; want 30ms, true", s1, d, ok)
	}
	if _, ok := p.applied(5, s1, t0); ok {
		t.Fatal("a proposal applied twice was counted twice")
	}
	if _, ok := p.applied(4, s2, t0); ok {
		t.Fatal("an entry of term 4 with a tracked seq was taken for this term's")
	}
	// Expiry: older than the limit only (s2 is 2s old at t0+3s, s3 1s).
	if n := p.expire(t0.Add(3*time.Second), 1500*time.Millisecond, time.Hour); n != 1 || p.len() != 1 {
		t.Fatalf("expire forgot %d, %d left; want 1, 1", n, p.len())
	}
	if _, ok := p.applied(5, s2, t0); ok {
		t.Fatal("an expired proposal was still tracked")
	}
	if n := p.newTerm(5); n != 0 || p.len() != 1 {
		t.Fatalf("newTerm(same) forgot %d, want 0", n)
	}
	if n := p.newTerm(6); n != 1 || p.len() != 0 {
		t.Fatalf("newTerm(6) forgot %d, %d left; want 1, 0", n, p.len())
	}
	if _, ok := p.applied(5, s3, t0); ok {
		t.Fatal("a proposal of the old term was still tracked")
	}
	term, s4 := p.next()
	if term != 6 || s4 != 4 {
		t.Fatalf("after the new term next gave (%d, %d), want (6, 4)", term, s4)
	}
}

// TestProposalsOrphans: proposals made as leader outlive their term as
// orphans; one applied late is forgotten without a second release; the
// rest come back, in proposal order, only when an entry of a later term
// is applied, and once. Follower proposals never come back. An expired
// leader proposal becomes an orphan; old orphans expire; a snapshot
// forgets them all.
func TestProposalsOrphans(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newProposals(3)
	batches := map[uint64]*batch{}
	for k := range 4 {
		_, s := p.next()
		var lead *batch
		if k != 2 { // the third was proposed as follower
			lead = &batch{num: 100 + s}
			batches[s] = lead
		}
		p.made(s, t0, lead)
	}
	if n := p.newTerm(4); n != 4 || p.len() != 0 || p.orphaned() != 3 {
		t.Fatalf("newTerm(4) forgot %d, %d tracked, %d orphans; want 4, 0, 3", n, p.len(), p.orphaned())
	}
	// Entries of term 3 are still being applied: nothing is lost yet.
	if lost := p.lost(3); lost != nil {
		t.Fatalf("lost(3) = %d batches; an entry of the orphans' own term settles nothing", len(lost))
	}
	if _, ok := p.applied(3, 2, t0); ok {
		t.Fatal("an orphan applied late was released again")
	}
	if p.orphaned() != 2 {
		t.Fatalf("%d orphans after one was applied, want 2", p.orphaned())
	}
	lost := p.lost(4)
	if len(lost) != 2 || lost[0].num != 101 || lost[1].num != 104 {
		t.Fatalf("lost(4) = %+v, want the batches of seqs 1 and 4 in that order", lost)
	}
	if again := p.lost(5); again != nil || p.orphaned() != 0 {
		t.Fatalf("lost again: %d batches, %d orphans left", len(again), p.orphaned())
	}

	// Expiry: a leader proposal past the limit leaves flight as an orphan;
	// it may still be applied in this term, without a release.
	_, s := p.next()
	p.made(s, t0, &batch{num: 7})
	if n := p.expire(t0.Add(2*time.Second), time.Second, time.Hour); n != 1 || p.orphaned() != 1 {
		t.Fatalf("expire: %d forgotten, %d orphans; want 1, 1", n, p.orphaned())
	}
	if _, ok := p.applied(4, s, t0); ok || p.orphaned() != 0 {
		t.Fatalf("an expired proposal applied in its term: released %v, %d orphans left; want false, 0", ok, p.orphaned())
	}
	_, s = p.next()
	p.made(s, t0, &batch{num: 8})
	p.expire(t0.Add(2*time.Second), time.Second, time.Hour)
	if p.expire(t0.Add(2*time.Hour), time.Second, time.Hour); p.orphaned() != 0 {
		t.Fatal("an orphan older than its limit was kept")
	}
	_, s = p.next()
	p.made(s, t0, &batch{num: 9})
	p.newTerm(5)
	p.forgetOrphans()
	if lost := p.lost(6); lost != nil {
		t.Fatal("orphans came back after a snapshot forgot them")
	}
}
