package memnode_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode/memnodetest"
)

// BenchmarkKillRestart loads STRAND_RESTART_KEYS keys (default 1000000)
// into a memory node in blocks of 10000 writes, then per iteration kills
// it (the memory tier is lost, storage keeps its savepoint) and measures
// the time until it serves again: listening, storage open, a client
// connected and a read of a loaded key answered. It reports the blocks
// each kill lost (above the storage savepoint), which the peer would
// re-apply.
func BenchmarkKillRestart(b *testing.B) {
	keys := 1000000
	if s := os.Getenv("STRAND_RESTART_KEYS"); s != "" {
		var err error
		if keys, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	tl, err := memnodetest.NewTLS()
	if err != nil {
		b.Fatal(err)
	}
	n, err := memnodetest.Start(tl, b.TempDir(), tiered.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = n.Close() }()
	c, err := n.Dial(-1)
	if err != nil {
		b.Fatal(err)
	}
	const perBlock = 10000
	value := make([]byte, 32)
	var batch statedb.Batch
	h := uint64(0)
	for i := 0; i < keys; i += perBlock {
		batch.Reset()
		for j := i; j < min(i+perBlock, keys); j++ {
			batch.Put("bench", fmt.Sprintf("key%09d", j), value, statedb.Version{Block: h})
		}
		h++
		if err := c.Apply(&batch, h, false); err != nil {
			b.Fatal(err)
		}
	}
	_ = c.Close()
	lost := uint64(0)
	b.ResetTimer()
	for range b.N {
		before := n.Server().Metrics().Tiers
		if err := n.Kill(); err != nil {
			b.Fatal(err)
		}
		lost += before.Height - before.Durable
		if err := n.Restart(); err != nil {
			b.Fatal(err)
		}
		c, err := n.Dial(-1)
		if err != nil {
			b.Fatal(err)
		}
		if _, found, err := c.Get("bench", fmt.Sprintf("key%09d", keys/2)); err != nil || (!found && keys/2 < int(perBlock*n.Server().Metrics().Tiers.Height)) {
			b.Fatalf("read after restart: found %v, %v", found, err)
		}
		_ = c.Close()
		b.StopTimer()
		// Bring the node back to height h, as the peer would, for the
		// next kill: re-apply what was lost.
		c, err = n.Dial(-1)
		if err != nil {
			b.Fatal(err)
		}
		sp, _ := c.Savepoint()
		for hh := sp; hh < h; hh++ {
			batch.Reset()
			for j := int(hh) * perBlock; j < min(int(hh+1)*perBlock, keys); j++ {
				batch.Put("bench", fmt.Sprintf("key%09d", j), value, statedb.Version{Block: hh})
			}
			if err := c.Apply(&batch, hh+1, false); err != nil {
				b.Fatal(err)
			}
		}
		_ = c.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(lost)/float64(b.N), "lost-blocks/kill")
	b.ReportMetric(float64(keys), "keys")
}
