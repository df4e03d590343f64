package memnode_test

import (
	"sync"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode"
	"github.com/strand-ledger/strand/memnode/memnodetest"
)

// TestReadDuringApplyIsCached holds the writer's Apply of height 2 in
// flight after the node applied it, and reads two keys the cache lacks:
// "w", which the batch writes, and "u", which it does not. The node
// answers both at height 2. "u"'s answer is its state at height 1 too, so
// the cache keeps it and a later read needs no call; "w"'s is not (the
// cache, at height 1, must not hold a value from height 2), and after the
// Apply the cache answers "w" with the batch's value.
func TestReadDuringApplyIsCached(t *testing.T) {
	tl, err := memnodetest.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	n, err := memnodetest.Start(tl, t.TempDir(), tiered.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Close() }()
	c, err := n.Dial(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b1 statedb.Batch
	b1.Put("ns", "other", []byte("x"), statedb.Version{Block: 0})
	if err := c.Apply(&b1, 1, false); err != nil {
		t.Fatal(err)
	}

	reached, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	defer free() // before Close, which waits for the Apply held here
	memnode.SetApplied(n.Server(), func(h uint64) {
		if h == 2 {
			close(reached)
			<-release
		}
	})
	var b2 statedb.Batch
	b2.Put("ns", "w", []byte("new"), statedb.Version{Block: 1})
	applied := make(chan error, 1)
	go func() { applied <- c.Apply(&b2, 2, false) }()
	<-reached

	m0 := c.Metrics()
	out := make([]statedb.Result, 2)
	if err := c.GetMany([]statedb.Key{{Namespace: "ns", Key: "w"}, {Namespace: "ns", Key: "u"}}, out); err != nil {
		t.Fatal(err)
	}
	m1 := c.Metrics()
	if !out[0].Found || string(out[0].Value.Data) != "new" || out[1].Found {
		t.Fatalf("read during the Apply: w %+v, u %+v; want w = new (the node's height 2) and u absent", out[0], out[1])
	}
	if reads, stale := m1.RemoteReads-m0.RemoteReads, m1.StalePuts-m0.StalePuts; reads != 2 || stale != 1 {
		t.Fatalf("read during the Apply: %d keys read remotely, %d not kept by the cache; want 2 and 1 (w only)", reads, stale)
	}
	free()
	if err := <-applied; err != nil {
		t.Fatal(err)
	}

	m2 := c.Metrics()
	for _, k := range []struct{ key, want string }{{"u", ""}, {"w", "new"}} {
		v, found, err := c.Get("ns", k.key)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(v.Data); found != (k.want != "") || got != k.want {
			t.Fatalf("after the Apply: %s = %q (found %v), want %q", k.key, got, found, k.want)
		}
	}
	if m3 := c.Metrics(); m3.RemoteReads != m2.RemoteReads || m3.CacheHits-m2.CacheHits != 2 {
		t.Fatalf("after the Apply: %d remote reads, %d cache hits; want 0 and 2 (u kept from the read during the Apply, w from the batch)",
			m3.RemoteReads-m2.RemoteReads, m3.CacheHits-m2.CacheHits)
	}
}
