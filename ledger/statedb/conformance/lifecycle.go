package conformance

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
)

func lifecycleCases() []testCase {
	return []testCase{
		{name: "Closed", run: testClosed},
		{name: "ConcurrentReadsDuringApply", run: testConcurrent},
		{name: "Reopen", persistent: true, run: testReopen},
	}
}

func testClosed(t *testing.T, h *harness) {
	h.put("cc", "k", []byte("v"), statedb.Version{Block: 1}, 1)
	if err := h.db.Close(); err != nil {
		t.Fatalf("%s: Close: %v", h.f.Name, err)
	}
	db := h.db
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, statedb.ErrClosed) {
			t.Errorf("%s: %s after Close: err = %v, want ErrClosed", h.f.Name, op, err)
		}
	}
	_, _, err := db.Get("cc", "k")
	check("Get", err)
	check("GetMany", db.GetMany([]statedb.Key{nk("cc", "k")}, make([]statedb.Result, 1)))
	check("Scan", db.Scan("cc", "", "", func(string, statedb.Value) bool {
		t.Errorf("%s: Scan after Close called fn", h.f.Name)
		return true
	}))
	var b statedb.Batch
	b.Put("cc", "k", []byte("v2"), statedb.Version{Block: 2})
	check("Apply", db.Apply(&b, 2, true))
	_, err = db.Savepoint()
	check("Savepoint", err)
	check("second Close", db.Close())
}

// counterKeys are written with the same counter by every batch of
// testConcurrent; a reader that sees them differ saw half a batch.
var counterKeys = [2]string{"x", "y"}

func testConcurrent(t *testing.T, h *harness) {
	const batches = 300
	enc := func(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
	var b statedb.Batch
	for _, k := range counterKeys {
		b.Put("cc", k, enc(0), statedb.Version{Block: 0})
	}
	h.apply(&b, 1)

	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	reader := func(read func(last *uint64) error) {
		defer wg.Done()
		var last uint64
		for !done.Load() {
			if err := read(&last); err != nil {
				errs <- err
				return
			}
		}
	}
	scanPair := func(last *uint64) error {
		// Every key present carries the counter of the batch that wrote it
		// last, so all must be equal.
		var got []uint64
		pair := 0
		err := h.db.Scan("cc", "", "", func(key string, v statedb.Value) bool {
			got = append(got, binary.BigEndian.Uint64(v.Data))
			if key == counterKeys[0] || key == counterKeys[1] {
				pair++
			}
			return true
		})
		if err != nil {
			return fmt.Errorf("Scan: %w", err)
		}
		if pair != 2 {
			return fmt.Errorf("Scan saw %d of the keys %q, want both", pair, counterKeys)
		}
		for _, n := range got {
			if n != got[0] {
				return fmt.Errorf("Scan saw counters %v: half of a batch", got)
			}
		}
		if got[0] < *last {
			return fmt.Errorf("Scan saw counter %d after %d: went back", got[0], *last)
		}
		*last = got[0]
		return nil
	}
	getOne := func(last *uint64) error {
		v, ok, err := h.db.Get("cc", counterKeys[1])
		if err != nil || !ok {
			return fmt.Errorf("Get(cc, y) = found %v, err %v; want found", ok, err)
		}
		n := binary.BigEndian.Uint64(v.Data)
		if n < *last {
			return fmt.Errorf("Get saw counter %d after %d: went back", n, *last)
		}
		*last = n
		return nil
	}
	getMany := func(*uint64) error {
		out := make([]statedb.Result, 3)
		return h.db.GetMany([]statedb.Key{nk("cc", "x"), nk("cc", "y"), nk("cc", "filler-7")}, out)
	}
	for _, r := range []func(*uint64) error{scanPair, scanPair, getOne, getMany} {
		wg.Add(1)
		go reader(r)
	}

	for i := uint64(1); i <= batches; i++ {
		b.Reset()
		b.Put("cc", counterKeys[0], enc(i), statedb.Version{Block: i})
		for j := range 10 {
			b.Put("cc", fmt.Sprintf("filler-%d", j), enc(i), statedb.Version{Block: i})
		}
		b.Put("cc", counterKeys[1], enc(i), statedb.Version{Block: i})
		if err := h.db.Apply(&b, i+1, false); err != nil {
			done.Store(true)
			wg.Wait()
			t.Fatalf("%s: Apply batch %d: %v", h.f.Name, i, err)
		}
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("%s: concurrent reader: %v", h.f.Name, err)
	}
	h.wantSavepoint(batches + 1)
}

func testReopen(t *testing.T, h *harness) {
	var b statedb.Batch
	b.Put("cc", "k", []byte("v"), statedb.Version{Block: 4, Tx: 2})
	b.Put("cc", "gone", []byte("v"), statedb.Version{Block: 4, Tx: 3})
	b.Put("dd", "\x00\xff", nil, statedb.Version{Block: 4, Tx: 4})
	h.apply(&b, 5)
	b.Reset()
	b.Delete("cc", "gone", statedb.Version{Block: 5})
	if err := h.db.Apply(&b, 6, true); err != nil {
		t.Fatalf("%s: Apply with sync: %v", h.f.Name, err)
	}
	h.reopen()
	h.wantSavepoint(6)
	h.wantValue("cc", "k", []byte("v"), statedb.Version{Block: 4, Tx: 2})
	h.wantValue("dd", "\x00\xff", nil, statedb.Version{Block: 4, Tx: 4})
	h.wantMissing("cc", "gone")

	b.Reset()
	b.Put("cc", "k", []byte("stale"), statedb.Version{Block: 9})
	if err := h.db.Apply(&b, 6, false); !errors.Is(err, statedb.ErrSavepointOrder) {
		t.Fatalf("%s: Apply at height 6 after reopen at savepoint 6: err = %v, want ErrSavepointOrder", h.f.Name, err)
	}
	h.apply(&b, 7)
	h.reopen()
	h.wantSavepoint(7)
	h.wantValue("cc", "k", []byte("stale"), statedb.Version{Block: 9})
	// A failed Apply must leave nothing behind that a reopen would reveal.
	b.Reset()
	b.Put("cc", "half", []byte("x"), statedb.Version{Block: 9})
	b.Put("", "bad", []byte("x"), statedb.Version{Block: 9})
	if err := h.db.Apply(&b, 8, true); !errors.Is(err, statedb.ErrBadNamespace) {
		t.Fatalf("%s: Apply with empty namespace: err = %v, want ErrBadNamespace", h.f.Name, err)
	}
	h.reopen()
	h.wantSavepoint(7)
	h.wantMissing("cc", "half")
}
