package leveldb_test

import (
	"errors"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/conformance"
	"github.com/strand-ledger/strand/ledger/statedb/leveldb"
)

var factory = conformance.Factory{
	Name:       "leveldb",
	Open:       func(dir string) (statedb.DB, error) { return leveldb.Open(dir, leveldb.Options{}) },
	Persistent: true,
}

func TestConformance(t *testing.T) { conformance.Run(t, factory) }

func BenchmarkLevelDB(b *testing.B) { conformance.RunBenchmarks(b, factory) }

func TestOptions(t *testing.T) {
	for _, o := range []leveldb.Options{
		{CacheSize: -1}, {WriteBufferSize: -1}, {WriteBufferSize: 1<<30 + 1}, {Compression: "zstd"},
		{BloomBitsPerKey: -2}, {BloomBitsPerKey: 33}, {MaxOpenFiles: -1},
	} {
		if _, err := leveldb.Open(t.TempDir(), o); !errors.Is(err, leveldb.ErrBadOptions) {
			t.Errorf("Open with %+v: err = %v, want ErrBadOptions", o, err)
		}
	}
	db, err := leveldb.Open(t.TempDir(), leveldb.Options{Compression: "none", BloomBitsPerKey: -1})
	if err != nil {
		t.Fatalf("Open with no compression and no filter: %v", err)
	}
	_ = db.Close()
}
