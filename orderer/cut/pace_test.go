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
	if p.Behind(10, t0) {
		t.Fatal("behind with no reports")
	}
	p.Report("a", 8, t0)
	if !p.Behind(10, t0) || p.Behind(9, t0) {
		t.Fatal("a at 8: want behind of 10, not of 9")
	}
	p.Report("a", 7, t0.Add(time.Millisecond)) // an older submit's report, late
	if p.Behind(9, t0) {
		t.Fatal("a lower report replaced a higher fresh one")
	}
	if p.Behind(10, t0.Add(PaceFresh)) {
		t.Fatal("a stale report still holds the cut")
	}
	p.Report("a", 3, t0.Add(2*PaceFresh)) // the old one expired: take it
	if !p.Behind(5, t0.Add(2*PaceFresh)) {
		t.Fatal("a fresh report after expiry was ignored")
	}
	p.Report(strings.Repeat("x", paceMaxName+1), 0, t0.Add(2*PaceFresh))
	if _, ok := p.peers[strings.Repeat("x", paceMaxName+1)]; ok {
		t.Fatal("a reporter name over the bound was remembered")
	}
	for i := range paceMaxPeers + 10 {
		p.Report(fmt.Sprint("peer", i), 100, t0.Add(2*PaceFresh))
	}
	if n := len(p.peers); n != paceMaxPeers {
		t.Fatalf("%d reporters remembered, want the bound %d", n, paceMaxPeers)
	}
}
