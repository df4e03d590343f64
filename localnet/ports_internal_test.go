package localnet

import "testing"

// TestAllocPortsAvoids: ports handed out for a node added later never
// repeat a port of the nodes generated before, whose listeners closed.
func TestAllocPortsAvoids(t *testing.T) {
	first, err := allocPorts(0, 40)
	if err != nil {
		t.Fatal(err)
	}
	used := map[int]bool{}
	lo, hi := freePortRange()
	for _, p := range first {
		used[p] = true
		if p < lo || p > hi {
			t.Fatalf("port %d outside %d-%d, below the kernel's ephemeral ports", p, lo, hi)
		}
	}
	if len(used) != 40 {
		t.Fatalf("allocPorts gave repeated ports: %v", first)
	}
	for range 5 {
		later, err := allocPorts(0, 40, used)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range later {
			if used[p] {
				t.Fatalf("port %d handed out again", p)
			}
		}
	}
	l := &Layout{Nodes: []Node{{Address: "127.0.0.1:7051", Metrics: "127.0.0.1:9443"}}, Computes: []Node{{Address: "10.0.0.5:7060"}}}
	if u := l.usedPorts(); len(u) != 3 || !u[7051] || !u[9443] || !u[7060] {
		t.Errorf("usedPorts = %v", u)
	}
}
