package conformance

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// Benchmark workload: benchKeys keys of benchValueSize bytes in one
// namespace, loaded before each sub-benchmark starts its clock.
const (
	benchKeys      = 10000
	benchValueSize = 100
	benchNS        = "bench"
)

// benchKeyNames holds the names of 2*benchKeys keys; the first half is
// loaded, the second half never is. Precomputed so the benchmarks measure
// the backend, not fmt.
var benchKeyNames = sync.OnceValue(func() []string {
	keys := make([]string, 2*benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%08d", i)
	}
	return keys
})

func benchKey(i int) string { return benchKeyNames()[i] }

// RunBenchmarks measures the backend f opens: Get (hit and miss), GetMany
// of 8 keys, Apply of a 100-write batch with sync=false, and Scan of 100
// keys, each over a database preloaded with 10,000 keys of 100 bytes.
func RunBenchmarks(b *testing.B, f Factory) {
	b.Run("Get/hit", func(b *testing.B) {
		db := benchOpen(b, f)
		i := 0
		for b.Loop() {
			if _, ok, err := db.Get(benchNS, benchKey(i*7919%benchKeys)); err != nil || !ok {
				b.Fatalf("%s: Get: found %v, err %v", f.Name, ok, err)
			}
			i++
		}
	})
	b.Run("Get/miss", func(b *testing.B) {
		db := benchOpen(b, f)
		i := 0
		for b.Loop() {
			if _, ok, err := db.Get(benchNS, benchKey(benchKeys+i%benchKeys)); err != nil || ok {
				b.Fatalf("%s: Get of a missing key: found %v, err %v", f.Name, ok, err)
			}
			i++
		}
	})
	b.Run("GetMany/8", func(b *testing.B) {
		db := benchOpen(b, f)
		keys := make([]statedb.Key, 8)
		out := make([]statedb.Result, 8)
		i := 0
		for b.Loop() {
			for j := range keys {
				keys[j] = statedb.Key{Namespace: benchNS, Key: benchKey((i*8 + j) * 7919 % benchKeys)}
			}
			if err := db.GetMany(keys, out); err != nil {
				b.Fatalf("%s: GetMany: %v", f.Name, err)
			}
			i++
		}
	})
	b.Run("Apply/100", func(b *testing.B) {
		db := benchOpen(b, f)
		value := make([]byte, benchValueSize)
		keys := benchKeyNames()
		var batch statedb.Batch
		height := uint64(2)
		for b.Loop() {
			batch.Reset()
			for j := range 100 {
				batch.Put(benchNS, keys[(int(height)*100+j)%benchKeys], value, statedb.Version{Block: height, Tx: uint32(j)})
			}
			if err := db.Apply(&batch, height, false); err != nil {
				b.Fatalf("%s: Apply: %v", f.Name, err)
			}
			height++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/write")
	})
	b.Run("Scan/100", func(b *testing.B) {
		db := benchOpen(b, f)
		i := 0
		for b.Loop() {
			n := 0
			start := benchKey(i * 7919 % (benchKeys - 100))
			err := db.Scan(benchNS, start, "", func(string, statedb.Value) bool {
				n++
				return n < 100
			})
			if err != nil || n != 100 {
				b.Fatalf("%s: Scan from %q: %d keys, err %v; want 100", f.Name, start, n, err)
			}
			i++
		}
	})
}

// benchOpen opens a database in a fresh directory, loads the benchmark
// keys at savepoint 1, and closes it when the benchmark ends.
func benchOpen(b *testing.B, f Factory) statedb.DB {
	b.Helper()
	db, err := f.Open(b.TempDir())
	if err != nil {
		b.Fatalf("%s: Open: %v", f.Name, err)
	}
	b.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, statedb.ErrClosed) {
			b.Errorf("%s: Close: %v", f.Name, err)
		}
	})
	value := make([]byte, benchValueSize)
	for i := range value {
		value[i] = byte(i)
	}
	var batch statedb.Batch
	for i := range benchKeys {
		batch.Put(benchNS, benchKey(i), value, statedb.Version{Block: 1, Tx: uint32(i)})
	}
	if err := db.Apply(&batch, 1, true); err != nil {
		b.Fatalf("%s: loading %d keys: %v", f.Name, benchKeys, err)
	}
	return db
}
