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
		Compression:              DefaultCompression,
		BlobCompression:          DefaultBlobCompression,
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
		{Compression: "lz4"},
		{BlobCompression: "Snappy"},
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

// TestBlobCompression: BlobCompression decides how separated values are
// stored (raw with "none", compressed otherwise), Compression does not,
// and a database reads back what either setting wrote.
func TestBlobCompression(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 64000) // as the fixed-asset padding
	blobBytes := map[string]int64{}
	dir := map[string]string{}
	for _, c := range []string{"none", "snappy", "minlz", "zstd"} {
		dir[c] = t.TempDir()
		d, err := Open(dir[c], Options{Compression: "none", BlobCompression: c})
		if err != nil {
			t.Fatal(err)
		}
		var b statedb.Batch
		for i := range 20 {
			b.Put("ns", "asset"+strconv.Itoa(i), big, statedb.Version{Block: 1, Tx: uint32(i)})
		}
		if err := d.Apply(&b, 2, true); err != nil {
			t.Fatal(err)
		}
		if err := d.db.Flush(); err != nil {
			t.Fatal(err)
		}
		d.Close()
		matches, _ := filepath.Glob(filepath.Join(dir[c], "*.blob"))
		for _, m := range matches {
			fi, err := os.Stat(m)
			if err != nil {
				t.Fatal(err)
			}
			blobBytes[c] += fi.Size()
		}
	}
	if raw := blobBytes["none"]; raw < 20*64000 {
		t.Errorf("BlobCompression none: blob files hold %d bytes, want at least the 20 raw values (%d)", raw, 20*64000)
	}
	for _, c := range []string{"snappy", "minlz", "zstd"} {
		if blobBytes[c]*10 > blobBytes["none"] {
			t.Errorf("BlobCompression %s: blob files hold %d bytes, raw %d: want them compressed at least 10x", c, blobBytes[c], blobBytes["none"])
		}
	}
	// Reopen what "none" wrote with the defaults: the setting applies to new
	// files only, old ones stay readable.
	d, err := Open(dir["none"], Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	v, ok, err := d.Get("ns", "asset7")
	if err != nil || !ok || !bytes.Equal(v.Data, big) {
		t.Fatalf("Get asset7 after reopening with other compression = %d bytes, %v, %v", len(v.Data), ok, err)
	}
}
