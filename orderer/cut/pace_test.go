package cut

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestPacer: a peer is behind when its fresh report is more than
// PaceBacklog short of the cut height; stale reports stop counting, and a
// lower report racing a higher one is ignored.
func TestPacer(t *testing.T) {
	var p Pacer
	t0 := time.Unix(1000, 0)
	if p.Behind("c", 10, t0) {
		t.Fatal("behind with no reports")
	}
	p.Report("a", "c", 8, t0)
	if !p.Behind("c", 10, t0) || p.Behind("c", 9, t0) {
		t.Fatal("a at 8: want behind of 10, not of 9")
	}
	p.Report("a", "c", 7, t0.Add(time.Millisecond)) // an older submit's report, late
	if p.Behind("c", 9, t0) {
		t.Fatal("a lower report replaced a higher fresh one")
	}
	if p.Behind("c", 10, t0.Add(PaceFresh)) {
		t.Fatal("a stale report still holds the cut")
	}
	p.Report("a", "c", 3, t0.Add(2*PaceFresh)) // the old one expired: take it
	if !p.Behind("c", 5, t0.Add(2*PaceFresh)) {
		t.Fatal("a fresh report after expiry was ignored")
	}
	p.Report(strings.Repeat("x", paceMaxName+1), "c", 0, t0.Add(2*PaceFresh))
	if _, ok := p.peers[peerChannel{strings.Repeat("x", paceMaxName+1), "c"}]; ok {
		t.Fatal("a reporter name over the bound was remembered")
	}
	for i := range paceMaxPeers + 10 {
		p.Report(fmt.Sprint("peer", i), "c", 100, t0.Add(2*PaceFresh))
	}
	if n := len(p.peers); n != paceMaxPeers {
		t.Fatalf("%d reporters remembered, want the bound %d", n, paceMaxPeers)
	}
}

// TestPacerChannels: one Pacer for a process's channels sums a peer's
// backlog over the channels it reported on lately; a peer that serves
// only one channel counts only that one; Detach forgets a channel, and
// every report wakes every attached loop.
func TestPacerChannels(t *testing.T) {
	var p Pacer
	t0 := time.Unix(1000, 0)
	wakes := map[string]int{}
	p.Attach("c1", func() { wakes["c1"]++ })
	p.Attach("c2", func() { wakes["c2"]++ })
	p.Report("a", "c1", 2, t0)
	p.Report("a", "c2", 4, t0)
	p.Report("b", "c1", 3, t0)
	if wakes["c1"] != 3 || wakes["c2"] != 3 {
		t.Fatalf("wakes %v after 3 reports, want 3 each", wakes)
	}
	p.Cut("c2", 5) // a has one block of c2 to commit
	if p.Behind("c1", 2, t0) {
		t.Fatal("behind with a one block short over both channels")
	}
	if !p.Behind("c1", 3, t0) {
		t.Fatal("a is one block short on c1 and one on c2: want behind (backlog 2 > 1)")
	}
	if _, ok := p.Reported("b", "c2"); ok {
		t.Fatal("b never reported on c2")
	}
	// A stale c2 report stops counting; a fresh c1 one still does.
	p.Report("a", "c1", 2, t0.Add(PaceFresh/2))
	if p.Behind("c1", 3, t0.Add(PaceFresh)) {
		t.Fatal("a stale report on c2 still counts in the backlog")
	}
	p.Report("a", "c2", 4, t0.Add(PaceFresh))
	if !p.Behind("c1", 3, t0.Add(PaceFresh)) {
		t.Fatal("a fresh report on c2 again: want behind")
	}
	p.Detach("c2")
	if p.Behind("c1", 3, t0.Add(PaceFresh)) {
		t.Fatal("a detached channel still counts in the backlog")
	}
	p.Report("a", "c1", 3, t0.Add(PaceFresh))
	if wakes["c2"] != 5 || wakes["c1"] != 6 {
		t.Fatalf("wakes %v, want c1 6 and c2 5 (c2 detached before the last report)", wakes)
	}
}

// TestPacerTakesTurns: when the peers can take one more block, the
// channel that has held its cut longest goes first; a channel whose own
// peers are busy does not keep the others waiting, and a hold the loop
// stopped asking about expires.
func TestPacerTakesTurns(t *testing.T) {
	var p Pacer
	t0 := time.Unix(1000, 0)
	for _, ch := range []string{"c1", "c2"} {
		p.Report("a", ch, 5, t0)
	}
	p.Cut("c2", 7) // a: two blocks of c2 to commit
	if !p.Behind("c1", 5, t0) || !p.Behind("c2", 7, t0.Add(time.Millisecond)) {
		t.Fatal("a has two blocks to commit: want both channels held")
	}
	p.Report("a", "c2", 6, t0.Add(2*time.Millisecond)) // room for one more
	if p.Behind("c2", 7, t0.Add(2*time.Millisecond)) == false {
		t.Fatal("c2 went before c1, which has held longer")
	}
	if p.Behind("c1", 5, t0.Add(2*time.Millisecond)) {
		t.Fatal("c1, held longest, was held again with room at the peer")
	}
	p.Cut("c1", 6) // c1 cut its block: its hold ends
	p.Report("a", "c2", 7, t0.Add(3*time.Millisecond))
	if p.Behind("c2", 7, t0.Add(3*time.Millisecond)) {
		t.Fatal("c2 still held after c1 took its turn and a caught up")
	}
	// A channel of other peers, busy, keeps nobody waiting.
	var q Pacer
	q.Report("x", "busy", 1, t0)
	q.Report("y", "free", 4, t0)
	q.Cut("free", 4)
	if !q.Behind("busy", 5, t0) {
		t.Fatal("x has four blocks of busy to commit: want busy held")
	}
	if q.Behind("free", 4, t0.Add(time.Millisecond)) {
		t.Fatal("free waited for busy, whose peer has no room anyway")
	}
	// A hold nobody asks about again expires.
	var r Pacer
	r.Report("a", "c1", 1, t0)
	r.Report("a", "c2", 1, t0)
	r.Cut("c2", 3)
	r.Behind("c1", 1, t0) // c1 held (a has two of c2), then never asks again
	r.Report("a", "c2", 2, t0.Add(PaceFresh))
	r.Report("a", "c1", 1, t0.Add(PaceFresh))
	if r.Behind("c2", 3, t0.Add(PaceFresh)) {
		t.Fatal("a hold older than PaceFresh still made c2 wait")
	}
}
