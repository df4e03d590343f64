package memdb_test

import (
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/conformance"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
)

var factory = conformance.Factory{
	Name: "memdb",
	Open: func(string) (statedb.DB, error) { return memdb.New(), nil },
}

// checkpointed checkpoints every 3 blocks, so that the suite's reopens
// load checkpoints written both in the background and at Close.
var checkpointed = conformance.Factory{
	Name:       "memdb with checkpoints",
	Open:       func(dir string) (statedb.DB, error) { return memdb.Open(dir, memdb.Options{EveryBlocks: 3}) },
	Persistent: true,
}

func TestConformance(t *testing.T) { conformance.Run(t, factory) }

func TestConformanceCheckpointed(t *testing.T) { conformance.Run(t, checkpointed) }

func BenchmarkMemDB(b *testing.B) { conformance.RunBenchmarks(b, factory) }

func BenchmarkMemDBCheckpointed(b *testing.B) { conformance.RunBenchmarks(b, checkpointed) }
