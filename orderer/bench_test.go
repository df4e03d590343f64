package orderer

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/orderer/cut"
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

// BenchmarkOrderingRaft1 is BenchmarkOrdering on a one-member Raft
// cluster: what Raft (a proposal, its log fsync, apply) adds when there
// is nobody to replicate to. The single-node orderer does not pay it.
func BenchmarkOrderingRaft1(b *testing.B) {
	dir := b.TempDir()
	benchOrdering(b, func(o *Orderer, raw []byte) error {
		return o.enqueue(context.Background(), admitted{raw: raw, id: "bench"})
	}, func(c *Config) {
		c.Raft = &RaftConfig{ID: 1, Dir: dir, TickInterval: 10 * time.Millisecond,
			Peers: []RaftPeer{{ID: 1, Org: "OrdererOrg", Name: "orderer0"}}}
	})
}

func benchOrdering(b *testing.B, submit func(*Orderer, []byte) error, tune ...func(*Config)) {
	n := newTestNet(b)
	pool := make([][]byte, 512)
	for i := range pool {
		pool[i], _ = n.txFor(b, testChannel, n.client1, "key")
	}
	store := openStore(b, b.TempDir())
	defer store.Close()
	cfg := n.config(store, cut.Config{})
	for _, f := range tune {
		f(&cfg)
	}
	o, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if o.raft != nil { // wait for the one member to elect itself
		for o.raft.leader.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
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

// BenchmarkLatency measures one transaction at a time in stream mode:
// enqueue, then wait until its block is stored. ns/op is the ordering
// latency without load; the Raft1 variant adds Raft's proposal, log fsync
// and apply for a one-member cluster.
func BenchmarkLatency(b *testing.B) { benchLatency(b, nil) }

func BenchmarkLatencyRaft1(b *testing.B) {
	dir := b.TempDir()
	benchLatency(b, &RaftConfig{ID: 1, Dir: dir, TickInterval: 10 * time.Millisecond,
		Peers: []RaftPeer{{ID: 1, Org: "OrdererOrg", Name: "orderer0"}}})
}

// BenchmarkLatencyRaft3 is BenchmarkLatency at the leader of a
// three-member cluster over mutual TLS on 127.0.0.1: the proposal, the
// leader's log fsync, a follower's append and fsync and its answer.
func BenchmarkLatencyRaft3(b *testing.B) {
	c := newCluster(b, 3, cut.Config{Mode: cut.ModeStream}, nil)
	m := c.members[c.leader()]
	raw, _ := c.n.tx(b, "key")
	latencyLoop(b, m.o, m.store, raw)
}

func benchLatency(b *testing.B, rc *RaftConfig) {
	n := newTestNet(b)
	raw, _ := n.tx(b, "key")
	store := openStore(b, b.TempDir())
	defer store.Close()
	cfg := n.config(store, cut.Config{Mode: cut.ModeStream})
	cfg.Raft = rc
	o, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	for o.raft != nil && o.raft.leader.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	latencyLoop(b, o, store, raw)
}

// latencyLoop orders raw at o b.N times, one at a time, each until its
// block is in store.
func latencyLoop(b *testing.B, o *Orderer, store *ledger.BlockStore, raw []byte) {
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wake := o.notify.wait()
		h := store.Height()
		if err := o.enqueue(context.Background(), admitted{raw: raw, id: "bench"}); err != nil {
			b.Fatal(err)
		}
		for store.Height() == h {
			<-wake
			wake = o.notify.wait()
		}
	}
}
