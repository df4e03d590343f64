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

func TestConformance(t *testing.T) { conformance.Run(t, factory) }

func BenchmarkMemDB(b *testing.B) { conformance.RunBenchmarks(b, factory) }
