package badger_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/badger"
	"github.com/strand-ledger/strand/ledger/statedb/conformance"
)

var factory = conformance.Factory{
	Name:       "badger",
	Open:       func(dir string) (statedb.DB, error) { return badger.Open(dir, badger.Options{}) },
	Persistent: true,
}

func TestConformance(t *testing.T) { conformance.Run(t, factory) }

func BenchmarkBadger(b *testing.B) { conformance.RunBenchmarks(b, factory) }

func TestOptions(t *testing.T) {
	for _, o := range []badger.Options{
		{CacheSize: -1}, {IndexCacheSize: -1}, {MemTableSize: 1 << 10}, {MemTableSize: 1<<30 + 1},
		{NumMemtables: -1}, {NumMemtables: 17}, {Compression: "lz4"},
	} {
		if _, err := badger.Open(t.TempDir(), o); !errors.Is(err, badger.ErrBadOptions) {
			t.Errorf("Open with %+v: err = %v, want ErrBadOptions", o, err)
		}
	}
	for _, c := range badger.Compressions {
		db, err := badger.Open(t.TempDir(), badger.Options{Compression: c, SyncWrites: true})
		if err != nil {
			t.Fatalf("Open with compression %q: %v", c, err)
		}
		_ = db.Close()
	}
}

// TestBatchTooBig checks that a batch over Badger's transaction limit is
// refused whole, with an error that says what to raise.
func TestBatchTooBig(t *testing.T) {
	db, err := badger.Open(t.TempDir(), badger.Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b statedb.Batch
	for i := range 100 { // 2 KiB values stay in the LSM tree: they count whole
		b.Put("cc", string(rune('a'+i%26))+string(rune(i)), bytes.Repeat([]byte{1}, 2<<10), statedb.Version{Block: 1})
	}
	if err := db.Apply(&b, 1, false); !errors.Is(err, badger.ErrBatchTooBig) {
		t.Fatalf("Apply of 200 KiB with a 1 MiB memtable: err = %v, want ErrBatchTooBig", err)
	}
	if sp, _ := db.Savepoint(); sp != 0 {
		t.Fatalf("savepoint after a refused batch = %d, want 0", sp)
	}
	if _, ok, _ := db.Get("cc", "a\x00"); ok {
		t.Fatal("a refused batch left a key behind")
	}
}

// TestLargeValuesBatch: values over ValueThreshold go to the value log
// and count as pointers towards the transaction limit, so a batch of
// them far over 15% of the memtable is applied, and reads back.
func TestLargeValuesBatch(t *testing.T) {
	dir := t.TempDir()
	db, err := badger.Open(dir, badger.Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var b statedb.Batch
	for i := range 100 { // 6.4 MB in all
		b.Put("cc", fmt.Sprint("k", i), bytes.Repeat([]byte{byte(i)}, 64<<10), statedb.Version{Block: 1, Tx: uint32(i)})
	}
	if err := db.Apply(&b, 2, true); err != nil {
		t.Fatalf("Apply of 100 values of 64 KiB with a 1 MiB memtable: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = badger.Open(dir, badger.Options{MemTableSize: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, i := range []int{0, 57, 99} {
		v, ok, err := db.Get("cc", fmt.Sprint("k", i))
		if err != nil || !ok || !bytes.Equal(v.Data, bytes.Repeat([]byte{byte(i)}, 64<<10)) || v.Version != (statedb.Version{Block: 1, Tx: uint32(i)}) {
			t.Fatalf("k%d after reopen: found %v at %v, %d bytes, err %v", i, ok, v.Version, len(v.Data), err)
		}
	}
}

// TestEmptyMemtableAfterCrash: a crash between Badger creating a memtable
// file and sizing it leaves an empty NNNNN.mem, which Badger alone refuses
// to open; Open removes it, and the data written before is all there.
func TestEmptyMemtableAfterCrash(t *testing.T) {
	dir := t.TempDir()
	db, err := badger.Open(dir, badger.Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var b statedb.Batch
	b.Put("cc", "k", []byte("v"), statedb.Version{Block: 1})
	if err := db.Apply(&b, 2, true); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "00099.mem"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if db, err = badger.Open(dir, badger.Options{MemTableSize: 1 << 20}); err != nil {
		t.Fatalf("Open with an empty memtable file: %v", err)
	}
	defer db.Close()
	if v, ok, err := db.Get("cc", "k"); err != nil || !ok || string(v.Data) != "v" {
		t.Fatalf("k after reopen: %q %v %v", v.Data, ok, err)
	}
}
