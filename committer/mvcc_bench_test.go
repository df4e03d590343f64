package committer

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// BenchmarkMVCCReads measures stage 2 on a state database that does not
// fit its cache: blocks of 500 transactions, each reading 4 random keys
// (at their current versions, so all are valid) of 100,000 and writing
// one, against each backend and value size, reading versions key by key
// (db.Get) or batched (statedb.VersionGetter, one call per block). One op
// is one block.
func BenchmarkMVCCReads(b *testing.B) {
	const keys, txsPerBlock, readsPerTx = 100_000, 500, 4
	for _, name := range []string{"pebble", "leveldb", "badger", "bbolt", "memory"} {
		for _, size := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/value=%d", name, size), func(b *testing.B) {
				db, err := openStateDB(b.TempDir(), name)
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				val := make([]byte, size)
				const per = 2000 // fits Badger's transaction limit
				for lo := 0; lo < keys; lo += per {
					var batch statedb.Batch
					for i := lo; i < lo+per; i++ {
						batch.Put("kv", fmt.Sprint("k", i), val, statedb.Version{Block: uint64(i % 7), Tx: uint32(i)})
					}
					if err := db.Apply(&batch, uint64(lo/per+1), false); err != nil {
						b.Fatal(err)
					}
				}
				rng := rand.New(rand.NewSource(1))
				txs := make([]txWork, txsPerBlock)
				for i := range txs {
					rw := &api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: "kv"}}}
					for r := 0; r < readsPerTx; r++ {
						k := rng.Intn(keys)
						rw.Namespaces[0].Reads = append(rw.Namespaces[0].Reads, rd(fmt.Sprint("k", k), ver(uint64(k%7), uint32(k))))
					}
					rw.Namespaces[0].Writes = append(rw.Namespaces[0].Writes, wr(fmt.Sprint("w", i), "v"))
					txs[i] = txWork{rw: rw, ver: statedb.Version{Block: 1000, Tx: uint32(i)}}
				}
				for _, batched := range []bool{false, true} {
					b.Run(map[bool]string{false: "keybykey", true: "batched"}[batched], func(b *testing.B) {
						var reader statedb.DB = db
						if !batched {
							reader = struct{ statedb.DB }{db} // hides GetVersions
						}
						benchValidate(b, newView(reader, 0), txs)
					})
				}
			})
		}
	}
}

func benchValidate(b *testing.B, v *view, txs []txWork) {
	work := make([]txWork, len(txs))
	for i := 0; i < b.N; i++ {
		copy(work, txs)
		if err := validateSequential(v, work); err != nil {
			b.Fatal(err)
		}
		for j := range work {
			if work[j].code != api.TxValidationCode_VALID {
				b.Fatalf("tx %d: %v", j, work[j].code)
			}
		}
		v.prune(1 << 62)
	}
	b.ReportMetric(float64(len(txs)*b.N)/b.Elapsed().Seconds(), "tx/s")
}
