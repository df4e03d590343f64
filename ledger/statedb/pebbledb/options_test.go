package pebbledb

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
		ValueSeparation:          DefaultValueSeparation,
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
		{ValueSeparation: -2},
		{ValueSeparation: 255},
		{ValueSeparation: 1<<30 + 1},
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

// TestValueSeparation: values at or over Options.ValueSeparation go to
// blob files when the memtable is flushed, smaller ones stay in the
// tables, and both read back, also after a reopen; -1 keeps them all in
// the tables.
func TestValueSeparation(t *testing.T) {
	for _, tc := range []struct {
		sep   int
		blobs bool
	}{{0, true}, {-1, false}} {
		dir := t.TempDir()
		d, err := Open(dir, Options{ValueSeparation: tc.sep})
		if err != nil {
			t.Fatal(err)
		}
		big := bytes.Repeat([]byte("v"), DefaultValueSeparation)
		var b statedb.Batch
		for i := range 50 {
			b.Put("ns", "big"+strconv.Itoa(i), big, statedb.Version{Block: 1, Tx: uint32(i)})
			b.Put("ns", "small"+strconv.Itoa(i), []byte("s"), statedb.Version{Block: 1, Tx: uint32(i)})
		}
		if err := d.Apply(&b, 2, true); err != nil {
			t.Fatal(err)
		}
		if err := d.db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		names, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var blobs []string
		for _, e := range names {
			if strings.HasSuffix(e.Name(), ".blob") {
				blobs = append(blobs, filepath.Join(dir, e.Name()))
			}
		}
		if (len(blobs) > 0) != tc.blobs {
			t.Errorf("ValueSeparation %d: blob files %v, want some: %v", tc.sep, blobs, tc.blobs)
		}
		d, err = Open(dir, Options{ValueSeparation: tc.sep})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			for key, want := range map[string][]byte{"big" + strconv.Itoa(i): big, "small" + strconv.Itoa(i): []byte("s")} {
				v, ok, err := d.Get("ns", key)
				if err != nil || !ok || !bytes.Equal(v.Data, want) || v.Version != (statedb.Version{Block: 1, Tx: uint32(i)}) {
					t.Fatalf("ValueSeparation %d: Get %s after reopen = %d bytes %v, %v, %v", tc.sep, key, len(v.Data), v.Version, ok, err)
				}
			}
		}
		d.Close()
	}
}
