package pebbledb_test

import (
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/conformance"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
)

var factory = conformance.Factory{
	Name:       "pebbledb",
	Open:       func(dir string) (statedb.DB, error) { return pebbledb.Open(dir, pebbledb.Options{}) },
	Persistent: true,
}

func TestConformance(t *testing.T) { conformance.Run(t, factory) }

func BenchmarkPebble(b *testing.B) { conformance.RunBenchmarks(b, factory) }
