//go:build rocksdb

package rocksdb_test

import (
	"errors"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/conformance"
	"github.com/strand-ledger/strand/ledger/statedb/rocksdb"
)

var factory = conformance.Factory{
	Name:       "rocksdb",
	Open:       func(dir string) (statedb.DB, error) { return rocksdb.Open(dir, rocksdb.Options{}) },
	Persistent: true,
}

func TestConformance(t *testing.T) { conformance.Run(t, factory) }

func BenchmarkRocksDB(b *testing.B) { conformance.RunBenchmarks(b, factory) }

func TestOptions(t *testing.T) {
	for _, o := range []rocksdb.Options{{CacheSize: -1}, {WriteBufferSize: -1}, {Compression: "brotli"}} {
		if _, err := rocksdb.Open(t.TempDir(), o); !errors.Is(err, rocksdb.ErrBadOptions) {
			t.Errorf("Open with %+v: err = %v, want ErrBadOptions", o, err)
		}
	}
	for _, c := range rocksdb.Compressions {
		db, err := rocksdb.Open(t.TempDir(), rocksdb.Options{Compression: c})
		if err != nil {
			t.Fatalf("Open with compression %q: %v", c, err)
		}
		_ = db.Close()
	}
}
