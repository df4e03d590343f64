package orderer

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// BenchmarkSubmit measures admission plus ordering: parallel submitters
// (GOMAXPROCS × -cpu goroutines) submit signed transactions, which are
// verified, cut (Fabric's defaults), signed and persisted with fsync to a
// real block store; the clock stops when every admitted transaction is
// stored. Submitters retry on ErrOverloaded.
func BenchmarkSubmit(b *testing.B) {
	benchOrdering(b, func(o *Orderer, raw []byte) error { return o.Submit(context.Background(), raw) })
}

// BenchmarkOrdering measures the ordered path alone: transactions enter
// the queue already admitted (no decoding or signature check), so this is
// the ceiling that cutting, sealing and persisting put on throughput.
func BenchmarkOrdering(b *testing.B) {
	benchOrdering(b, func(o *Orderer, raw []byte) error {
		return o.enqueue(context.Background(), admitted{raw: raw, id: "bench"})
	})
}

func benchOrdering(b *testing.B, submit func(*Orderer, []byte) error) {
	n := newTestNet(b)
	pool := make([][]byte, 512)
	for i := range pool {
		pool[i], _ = n.txFor(b, testChannel, n.client1, "key")
	}
	store := openStore(b, b.TempDir())
	defer store.Close()
	o, err := New(n.config(store, BatchConfig{}))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(pool[0])))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			for {
				err := submit(o, pool[i%len(pool)])
				if err == nil {
					break
				}
				if !errors.Is(err, ErrOverloaded) {
					b.Error(err)
					return
				}
				runtime.Gosched()
			}
			i++
		}
	})
	if err := o.Close(); err != nil { // cuts and persists the rest
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	m := o.Metrics()
	if m.Txs != uint64(b.N) {
		b.Fatalf("stored %d txs, want %d", m.Txs, b.N)
	}
	b.ReportMetric(float64(m.Txs)/elapsed.Seconds(), "tx/s")
	b.ReportMetric(m.AvgBlockTxs(), "txs/block")
	b.ReportMetric(m.BlocksPerAppend(), "blocks/fsync")
	b.ReportMetric(float64(m.Refused.Overloaded)/float64(b.N), "retries/tx")
}
