package tiered

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// TestReadsDuringEviction checks that reads see one height while the
// flusher flushes and evicts under them: every batch writes the same
// counter to 20 keys, a batch fills more than half the memory tier (so
// each Apply makes the flusher evict the previous batch's versions), and
// readers check that GetMany and Scan see all 20 keys with one counter,
// never going back.
func TestReadsDuringEviction(t *testing.T) {
	d, err := Open(t.TempDir(), Options{MemoryBytes: minMemoryBytes, CacheBytes: minCacheBytes, FlushBlocks: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const nkeys, batches = 20, 200
	keys := make([]statedb.Key, nkeys)
	for i := range keys {
		keys[i] = statedb.Key{Namespace: "cc", Key: fmt.Sprintf("key-%02d", i)}
	}
	pad := make([]byte, 100)
	apply := func(n uint64) {
		var b statedb.Batch
		for _, k := range keys {
			b.Put(k.Namespace, k.Key, binary.BigEndian.AppendUint64(pad[:0:0], n), statedb.Version{Block: n})
		}
		if err := d.Apply(&b, n+1, false); err != nil {
			t.Errorf("Apply(%d): %v", n+1, err)
		}
	}
	apply(0)

	var done atomic.Bool
	var wg sync.WaitGroup
	check := func(what string, vals []uint64, last *uint64) bool {
		for _, v := range vals {
			if v != vals[0] || len(vals) != nkeys {
				t.Errorf("%s saw counters %v: want %d keys of one batch", what, vals, nkeys)
				return false
			}
		}
		if vals[0] < *last {
			t.Errorf("%s went back from counter %d to %d", what, *last, vals[0])
			return false
		}
		*last = vals[0]
		return true
	}
	wg.Add(2)
	go func() { // GetMany
		defer wg.Done()
		out := make([]statedb.Result, nkeys)
		var last uint64
		for !done.Load() {
			if err := d.GetMany(keys, out); err != nil {
				t.Errorf("GetMany: %v", err)
				return
			}
			vals := make([]uint64, 0, nkeys)
			for _, r := range out {
				if r.Found {
					vals = append(vals, binary.BigEndian.Uint64(r.Value.Data))
				}
			}
			if !check("GetMany", vals, &last) {
				return
			}
		}
	}()
	go func() { // Scan
		defer wg.Done()
		var last uint64
		for !done.Load() {
			var vals []uint64
			if err := d.Scan("cc", "", "", func(_ string, v statedb.Value) bool {
				vals = append(vals, binary.BigEndian.Uint64(v.Data))
				return true
			}); err != nil {
				t.Errorf("Scan: %v", err)
				return
			}
			if !check("Scan", vals, &last) {
				return
			}
		}
	}()
	for n := uint64(1); n < batches && !t.Failed(); n++ {
		apply(n)
	}
	done.Store(true)
	wg.Wait()
	if m := d.Metrics(); m.Evicted == 0 || m.StorageReads == 0 {
		t.Errorf("want evictions and reads from storage:\n%v", m)
	} else {
		t.Logf("\n%v", m)
	}
}
