package snapshot

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
)

var benchKeys = flag.Int("snapshot.keys", 0, "BenchmarkSnapshot: also run with this many state keys")

// BenchmarkSnapshot exports and loads a ledger of N keys of 100-byte
// values in one namespace and N/10 tx ids (N/1000 blocks of 100
// transactions), on Pebble, and reports the file's size:
//
//	go test -run XXX -bench Snapshot -benchtime 1x ./ledger/snapshot [-snapshot.keys 1000000]
func BenchmarkSnapshot(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if *benchKeys > 0 {
		sizes = append(sizes, *benchKeys)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			src := benchLedger(b, n)
			path := filepath.Join(b.TempDir(), "snap")
			b.Run("export", func(b *testing.B) {
				for range b.N {
					info, err := Export(path, Source{Channel: "ch", Store: src.store, State: src.state})
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(info.Size), "file-bytes")
					b.ReportMetric(float64(info.Size)/float64(n), "bytes/key")
				}
			})
			b.Run("verify", func(b *testing.B) {
				for range b.N {
					if _, err := Verify(path); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("load", func(b *testing.B) {
				for range b.N {
					dir := b.TempDir()
					db, err := pebbledb.Open(filepath.Join(dir, "state"), pebbledb.Options{})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := Load(path, Target{StoreDir: filepath.Join(dir, "blocks"), State: db}); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					db.Close()
					os.RemoveAll(dir)
					b.StartTimer()
				}
			})
		})
	}
}

type benchSrc struct {
	store *ledger.BlockStore
	state *pebbledb.DB
}

func benchLedger(b *testing.B, n int) benchSrc {
	b.Helper()
	dir := b.TempDir()
	store, err := ledger.OpenBlockStore(filepath.Join(dir, "blocks"), ledger.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	state, err := pebbledb.Open(filepath.Join(dir, "state"), pebbledb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close(); state.Close() })
	var c testChain
	if err := store.Append([]ledger.Entry{c.block(b, 1, api.TxValidationCode_VALID)}); err != nil {
		b.Fatal(err)
	}
	blocks := max(1, n/1000)
	val := make([]byte, 100)
	var batch statedb.Batch
	for i := range blocks {
		e := c.block(b, 100, api.TxValidationCode_VALID)
		if err := store.Append([]ledger.Entry{e}); err != nil {
			b.Fatal(err)
		}
		batch.Reset()
		for k := i * n / blocks; k < (i+1)*n/blocks; k++ {
			batch.Put("bench", fmt.Sprintf("key%010d", k), val, statedb.Version{Block: e.Number, Tx: uint32(k % 100)})
		}
		if err := state.Apply(&batch, e.Number+1, false); err != nil {
			b.Fatal(err)
		}
	}
	return benchSrc{store: store, state: state}
}
