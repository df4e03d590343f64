package pebbledb

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/strand-ledger/strand/ledger/statedb"
)

func TestOptionsDefaults(t *testing.T) {
	var o Options
	if err := o.Validate(); err != nil {
		t.Fatalf("zero Options: Validate = %v, want nil", err)
	}
	o.EnsureDefaults()
	want := Options{
		CacheSize:                DefaultCacheSize,
		MemTableSize:             DefaultMemTableSize,
		BloomBitsPerKey:          DefaultBloomBitsPerKey,
		MaxOpenFiles:             DefaultMaxOpenFiles,
		MaxConcurrentCompactions: DefaultMaxConcurrentCompactions,
	}
	if o != want {
		t.Fatalf("EnsureDefaults = %+v, want %+v", o, want)
	}
	o = Options{CacheSize: 1 << 20, BloomBitsPerKey: -1}
	o.EnsureDefaults()
	if o.CacheSize != 1<<20 || o.BloomBitsPerKey != -1 {
		t.Fatalf("EnsureDefaults overwrote set fields: %+v", o)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{CacheSize: -1},
		{MemTableSize: 4 << 30},
		{BloomBitsPerKey: -2},
		{BloomBitsPerKey: 33},
		{MaxOpenFiles: -1},
		{MaxConcurrentCompactions: -1},
		{MaxConcurrentCompactions: 65},
	} {
		err := o.Validate()
		if !errors.Is(err, ErrBadOptions) {
			t.Errorf("Validate(%+v) = %v, want ErrBadOptions", o, err)
		}
		if _, err := Open(t.TempDir(), o); !errors.Is(err, ErrBadOptions) {
			t.Errorf("Open with %+v: err = %v, want ErrBadOptions", o, err)
		}
	}
}

func TestOpenCorruptSavepoint(t *testing.T) {
	dir := t.TempDir()
	pdb, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := pdb.Set(statedb.SavepointKey, []byte{1, 2, 3}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := pdb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, statedb.ErrCorrupt) {
		t.Fatalf("Open with a 3-byte savepoint record: err = %v, want ErrCorrupt", err)
	}
	// Open must have released Pebble's lock on the failed path.
	pdb, err = pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatalf("reopening after a failed Open: %v", err)
	}
	_ = pdb.Close()
}
