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
	p.made(s1, t0)
	_, s2 := p.next()
	p.made(s2, t0.Add(time.Second))
	_, s3 := p.next()
	p.made(s3, t0.Add(2*time.Second))
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
	if n := p.expire(t0.Add(3*time.Second), 1500*time.Millisecond); n != 1 || p.len() != 1 {
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
