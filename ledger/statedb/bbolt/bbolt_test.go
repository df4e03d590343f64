package bbolt_test

import (
	"errors"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/bbolt"
	"github.com/strand-ledger/strand/ledger/statedb/conformance"
)

var factory = conformance.Factory{
	Name:       "bbolt",
	Open:       func(dir string) (statedb.DB, error) { return bbolt.Open(dir, bbolt.Options{}) },
	Persistent: true,
}

func TestConformance(t *testing.T) { conformance.Run(t, factory) }

func TestConformanceNoSync(t *testing.T) {
	f := factory
	f.Name = "bbolt-nosync"
	f.Open = func(dir string) (statedb.DB, error) { return bbolt.Open(dir, bbolt.Options{NoSync: true}) }
	conformance.Run(t, f)
}

func BenchmarkBbolt(b *testing.B) { conformance.RunBenchmarks(b, factory) }

func TestOptions(t *testing.T) {
	for _, o := range []bbolt.Options{{InitialMmapSize: -1}, {InitialMmapSize: 1<<40 + 1}} {
		if _, err := bbolt.Open(t.TempDir(), o); !errors.Is(err, bbolt.ErrBadOptions) {
			t.Errorf("Open with %+v: err = %v, want ErrBadOptions", o, err)
		}
	}
}

// TestSecondOpen checks that a second Open of a directory in use fails
// with an error instead of waiting forever for bbolt's file lock.
func TestSecondOpen(t *testing.T) {
	dir := t.TempDir()
	db, err := bbolt.Open(dir, bbolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db2, err := bbolt.Open(dir, bbolt.Options{}); err == nil {
		_ = db2.Close()
		t.Fatal("a second Open of a directory in use succeeded")
	}
}
