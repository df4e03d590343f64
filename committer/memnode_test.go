package committer

import (
	"math/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode/memnodetest"
)

// TestMemoryNodeLoss commits a chain into a committer whose state lives
// on a memory node (over mutual TLS on 127.0.0.1) and kills the node
// twice, losing its memory tier, while blocks keep arriving; it is
// started again once the committer has waited for it. The committer
// must neither fail nor skip a block: it waits, restores the lost blocks
// from its block store, and ends with the codes and the state of a
// committer on Pebble. With the client's cache, stage 2's reads mostly
// hit it and stage 3's state batch meets the loss; without it, stage 2's
// reads do.
func TestMemoryNodeLoss(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cache int64
	}{{"cache", 0}, {"no cache", -1}} {
		t.Run(tc.name, func(t *testing.T) { memoryNodeLoss(t, tc.cache) })
	}
}

func memoryNodeLoss(t *testing.T, cache int64) {
	n := newTestNet(t)
	blocks := randomChain(t, n, rand.New(rand.NewSource(11)), 200)
	tl, err := memnodetest.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	// Flushed every 1000 blocks, never by time: both kills lose every
	// block (lossy counts them, should the flush policy change).
	mn, err := memnodetest.Start(tl, t.TempDir(), tiered.Options{FlushBlocks: 1000, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mn.Close() }()
	db, err := mn.Dial(cache)
	if err != nil {
		t.Fatal(err)
	}
	store, err := ledger.OpenBlockStore(filepath.Join(t.TempDir(), "blocks"), ledger.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(n.ch, store, db, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{Committer: c, store: store, db: db}
	t.Cleanup(p.close)

	lossy := uint64(0) // kills that lost blocks
	for i := 0; i < len(blocks); i++ {
		if i == 70 || i == 150 {
			if err := p.Sync(); err != nil {
				t.Fatal(err)
			}
			before := mn.Server().Metrics().Tiers.Height
			if err := mn.Kill(); err != nil {
				t.Fatal(err)
			}
			waits := c.Metrics().StateWaits
			for j := i; j < i+10; j++ {
				if err := p.Deliver(blocks[j]); err != nil {
					t.Fatalf("Deliver %d while the memory node is down: %v", j, err)
				}
			}
			i += 10
			for c.Metrics().StateWaits == waits {
				time.Sleep(time.Millisecond) // until the committer has met the dead node
			}
			if err := mn.Restart(); err != nil {
				t.Fatal(err)
			}
			after := mn.Server().Metrics().Tiers.Height
			t.Logf("killed the memory node at height %d; it restarted at %d", before, after)
			if after < before {
				lossy++
			}
		}
		if err := p.Deliver(blocks[i]); err != nil {
			t.Fatalf("Deliver %d: %v", i, err)
		}
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	m := c.Metrics()
	t.Logf("committer: %d state waits, %d losses, %d blocks re-applied", m.StateWaits, m.StateLosses, m.Recovered)
	if lossy == 0 || m.StateLosses < lossy || m.Recovered == 0 {
		t.Errorf("committer saw %d losses and re-applied %d blocks; %d kills lost blocks: want as many losses, at least one, and blocks re-applied", m.StateLosses, m.Recovered, lossy)
	}

	sameAsReplay(t, n, store, db, blocks, "on a memory node killed twice")
}
