package committer

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
)

// BenchmarkPipeline commits pre-signed blocks of 100 transactions (each
// reads and writes two keys of its own) into a fresh peer with a real block
// store (no fsync) and Pebble: b.N blocks per run. The crypto bound for the
// same signatures is what identity.BenchmarkVerifyP256 × 3 gives;
// `strand bench validator` reports the ratio in one run.
func BenchmarkPipeline(b *testing.B) {
	for _, mode := range []Mode{Sequential, Parallel} {
		b.Run(mode.String(), func(b *testing.B) {
			n := newTestNet(b)
			blocks := make([][]byte, b.N)
			for i := range blocks {
				txs := make([][]byte, 100)
				for j := range txs {
					k := fmt.Sprint("k", i, "-", j)
					txs[j] = n.tx(rwset(testContract, reads(rd(k, nil), rd(k+"x", nil)), wr(k, "v"), wr(k+"x", "w")))
				}
				blocks[i] = n.block(txs...)
			}
			p := openPeer(b, n, b.TempDir(), Options{Mode: mode})
			b.ResetTimer()
			for _, raw := range blocks {
				if err := p.Deliver(raw); err != nil {
					b.Fatal(err)
				}
			}
			if err := p.Sync(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(100*b.N)/b.Elapsed().Seconds(), "tx/s")
		})
	}
}

// BenchmarkStage2 measures MVCC validation alone (no crypto, in-memory
// state) on blocks of 500 transactions over 10,000 keys or over 100 hot
// keys, in each mode.
func BenchmarkStage2(b *testing.B) {
	for _, keys := range []int{10000, 100} {
		for _, mode := range []Mode{Sequential, Parallel} {
			b.Run(fmt.Sprintf("keys=%d/%s", keys, mode), func(b *testing.B) {
				rng := rand.New(rand.NewSource(1))
				txs := make([]txWork, 500)
				for i := range txs {
					rw := &api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: "kv"}}}
					for r := 0; r < 4; r++ {
						k := fmt.Sprint("k", rng.Intn(keys))
						rw.Namespaces[0].Reads = append(rw.Namespaces[0].Reads, rd(k, nil))
						rw.Namespaces[0].Writes = append(rw.Namespaces[0].Writes, wr(k, "v"))
					}
					txs[i] = txWork{rw: rw}
				}
				v := newView(memdb.New(), 0)
				work := make([]txWork, len(txs))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					copy(work, txs)
					var err error
					if mode == Parallel {
						err = validateParallel(v, work, 2)
					} else {
						err = validateSequential(v, work)
					}
					if err != nil {
						b.Fatal(err)
					}
					v.prune(1 << 62) // forget this block's writes
				}
				b.ReportMetric(float64(len(txs)*b.N)/b.Elapsed().Seconds(), "tx/s")
			})
		}
	}
}

// BenchmarkReparse is the work Options.Reparse adds to each of stages 2
// and 3 of a peer without a block cache: decoding a block of 100 signed
// transactions (two reads, two writes each) and every transaction in it
// again. Against the three P-256 verifications each transaction needs
// (identity.BenchmarkVerifyP256), it is what parse-once saves per stage.
func BenchmarkReparse(b *testing.B) {
	n := newTestNet(b)
	txs := make([][]byte, 100)
	for j := range txs {
		k := fmt.Sprint("k", j)
		txs[j] = n.tx(rwset(testContract, reads(rd(k, nil), rd(k+"x", nil)), wr(k, "v"), wr(k+"x", "w")))
	}
	raw := n.block(txs...)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		again, err := reparse(raw)
		if err != nil || len(again) != 100 || again[99] == nil {
			b.Fatalf("reparse: %d txs, %v", len(again), err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(100*b.N), "µs/tx")
}
