package memnode_test

import (
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/conformance"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode/memnodetest"
)

// factory serves each database from a memory node on 127.0.0.1 over
// mutual TLS; Close stops the node cleanly, so reopening restarts it on
// the same directory.
func factory(t testing.TB, name string, tiers tiered.Options, cacheBytes int64) conformance.Factory {
	tl, err := memnodetest.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	return conformance.Factory{
		Name:       name,
		Open:       func(dir string) (statedb.DB, error) { return memnodetest.Open(tl, dir, tiers, cacheBytes) },
		Persistent: true,
	}
}

func TestConformance(t *testing.T) {
	conformance.Run(t, factory(t, "memnode", tiered.Options{}, 0))
}

// TestConformanceSmall has a memory tier so small that reads fall through
// to storage and Apply waits for room, and a cache of 1 KiB.
func TestConformanceSmall(t *testing.T) {
	conformance.Run(t, factory(t, "memnode-small", tiered.Options{MemoryBytes: 4 << 10, FlushBlocks: 2}, 1<<10))
}

// TestConformanceNoCache sends every read to the node.
func TestConformanceNoCache(t *testing.T) {
	conformance.Run(t, factory(t, "memnode-nocache", tiered.Options{}, -1))
}

func BenchmarkMemnode(b *testing.B) {
	conformance.RunBenchmarks(b, factory(b, "memnode", tiered.Options{}, 0))
}

// BenchmarkMemnodeNoCache sends every read to the node: its Get is the
// remote-call latency (gRPC over mutual TLS on 127.0.0.1).
func BenchmarkMemnodeNoCache(b *testing.B) {
	conformance.RunBenchmarks(b, factory(b, "memnode-nocache", tiered.Options{}, -1))
}
