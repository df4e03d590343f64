package tiered

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
)

// dump renders a Dumper's whole state and savepoint.
func dump(t *testing.T, d statedb.Dumper) string {
	t.Helper()
	var sb strings.Builder
	sp, err := d.Dump(func(ns, key string, v statedb.Value) error {
		fmt.Fprintf(&sb, "%s/%s=%x@%v\n", ns, key, v.Data, v.Version)
		return nil
	})
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	return fmt.Sprintf("savepoint %d\n%s", sp, sb.String())
}

// model returns the state of applying the batches of heights 1 to h.
func model(t *testing.T, batches []statedb.Batch, h uint64) string {
	t.Helper()
	m := memdb.New()
	for i := range h {
		if err := m.Apply(&batches[i], i+1, false); err != nil {
			t.Fatal(err)
		}
	}
	return dump(t, m)
}

// TestMemoryTierLossUnderEviction loses the memory tier of a DB whose
// tier is far smaller than the state, after blocks of puts, overwrites
// and deletes, some applied with sync, while the flusher flushes and
// evicts. After the loss the DB must hold exactly the state of its
// savepoint (which is the storage tier's, and at least the last synced
// height), and after re-applying the blocks above it, exactly the state
// of every block: nothing acknowledged is lost, nothing evicted was
// missing from storage.
func TestMemoryTierLossUnderEviction(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	d, err := Open(t.TempDir(), Options{MemoryBytes: 8 << 10, CacheBytes: 1 << 10, FlushBlocks: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const blocks = 60
	var batches []statedb.Batch
	var synced uint64
	for h := uint64(1); h <= blocks; h++ {
		var b statedb.Batch
		for range 1 + r.IntN(12) {
			key := fmt.Sprintf("k%03d", r.IntN(200))
			if r.IntN(5) == 0 {
				b.Delete("cc", key, statedb.Version{Block: h - 1})
				continue
			}
			b.Put("cc", key, []byte(strings.Repeat("x", r.IntN(100))), statedb.Version{Block: h - 1, Tx: uint32(r.IntN(9))})
		}
		batches = append(batches, b)
		sync := h%20 == 7
		if err := d.Apply(&b, h, sync); err != nil {
			t.Fatalf("Apply(%d): %v", h, err)
		}
		if sync {
			synced = h
		}
		for range 3 { // reads fill the cache and touch the memory tier
			if _, _, err := d.Get("cc", fmt.Sprintf("k%03d", r.IntN(200))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m := d.Metrics(); m.Evicted == 0 {
		t.Fatalf("the memory tier never evicted; the test needs a smaller tier:\n%v", m)
	}
	if got, want := dump(t, d), model(t, batches, blocks); got != want {
		t.Fatalf("before the loss the state differs from the model:\n%s\nwant\n%s", got, want)
	}

	d.loseMemoryTier()
	sp, err := d.Savepoint()
	if err != nil {
		t.Fatal(err)
	}
	if m := d.Metrics(); sp != m.Durable || sp < synced {
		t.Fatalf("after the loss: savepoint %d, storage savepoint %d, last synced height %d", sp, m.Durable, synced)
	}
	if got, want := dump(t, d), model(t, batches, sp); got != want {
		t.Fatalf("after the loss the state is not that of height %d:\n%s\nwant\n%s", sp, got, want)
	}
	for h := sp + 1; h <= blocks; h++ {
		if err := d.Apply(&batches[h-1], h, false); err != nil {
			t.Fatalf("re-applying %d: %v", h, err)
		}
	}
	if got, want := dump(t, d), model(t, batches, blocks); got != want {
		t.Fatalf("after re-applying %d to %d the state differs from the model:\n%s\nwant\n%s", sp+1, blocks, got, want)
	}
}
