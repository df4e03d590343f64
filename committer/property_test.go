package committer

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
)

// TestParallelMatchesSequential is the determinism property: on random
// blocks under heavy contention (a handful of keys, stale and fresh reads,
// deletes, range reads, pre-invalidated transactions, state spread over the
// overlay and the database), parallel validation yields the same codes and
// the same state as sequential validation, bit for bit.
func TestParallelMatchesSequential(t *testing.T) {
	seeds, blocks := 30, 40
	if testing.Short() {
		seeds = 8
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			seq, par := newStateUnderTest(0), newStateUnderTest(16<<20) // par reads through the cache
			conflicts := 0
			for b := uint64(0); b < uint64(blocks); b++ {
				txs := randomBlock(t, rng, seq.view, b, 1+rng.Intn(60))
				s, p := cloneWork(txs), cloneWork(txs)
				if err := validateSequential(seq.view, s); err != nil {
					t.Fatal(err)
				}
				if err := validateParallel(par.view, p, 1+rng.Intn(8)); err != nil {
					t.Fatal(err)
				}
				for i := range s {
					if s[i].code != p[i].code {
						t.Fatalf("block %d tx %d: sequential %v, parallel %v", b, i, s[i].code, p[i].code)
					}
					if s[i].code == api.TxValidationCode_MVCC_READ_CONFLICT || s[i].code == api.TxValidationCode_PHANTOM_READ_CONFLICT {
						conflicts++
					}
				}
				flush := rng.Intn(3) == 0 || b == uint64(blocks-1)
				seq.commit(t, s, b, flush)
				par.commit(t, p, b, flush)
			}
			if a, b := seq.dump(t), par.dump(t); !reflect.DeepEqual(a, b) {
				t.Fatalf("final state differs:\nsequential %v\nparallel   %v", a, b)
			}
			if conflicts == 0 {
				t.Fatalf("no conflicts generated: the test would not exercise ordering")
			}
		})
	}
}

// stateUnderTest mimics stages 2 and 3: a view over a database, with
// batches persisted only now and then so that the overlay carries state.
type stateUnderTest struct {
	db      statedb.DB
	view    *view
	pending statedb.Batch
}

func newStateUnderTest(cacheBytes int64) *stateUnderTest {
	db := memdb.New()
	return &stateUnderTest{db: db, view: newView(db, cacheBytes)}
}

func (s *stateUnderTest) commit(t *testing.T, txs []txWork, block uint64, flush bool) {
	for i := range txs {
		if txs[i].code == api.TxValidationCode_VALID {
			appendWrites(&s.pending, txs[i].rw, txs[i].ver)
		}
	}
	if !flush {
		return
	}
	if err := s.db.Apply(&s.pending, block+1, false); err != nil {
		t.Fatal(err)
	}
	s.pending.Reset()
	s.view.prune(block + 1)
}

func (s *stateUnderTest) dump(t *testing.T) map[string]string {
	return dumpState(t, s.db, propNamespaces...)
}

var propNamespaces = []string{"kv", "other"}

func cloneWork(txs []txWork) []txWork { return append([]txWork(nil), txs...) }

// randomBlock draws a block of n transactions over 2 namespaces × 8 keys.
// Reads carry the current version most of the time, so that conflicts come
// mostly from earlier transactions of the same block.
func randomBlock(t *testing.T, rng *rand.Rand, v *view, block uint64, n int) []txWork {
	var buf []byte
	key := func() (string, string) {
		return propNamespaces[rng.Intn(2)], fmt.Sprint("k", rng.Intn(8))
	}
	txs := make([]txWork, n)
	for i := range txs {
		rw := &api.RWSet{}
		nsets := map[string]*api.NsRWSet{}
		get := func(ns string) *api.NsRWSet {
			if nsets[ns] == nil {
				nsets[ns] = &api.NsRWSet{Namespace: ns}
				rw.Namespaces = append(rw.Namespaces, nsets[ns])
			}
			return nsets[ns]
		}
		for r := rng.Intn(4); r > 0; r-- {
			ns, k := key()
			cur, found, err := v.version(ns, k, nil, &buf)
			if err != nil {
				t.Fatal(err)
			}
			read := &api.KVRead{Key: k}
			switch x := rng.Intn(10); {
			case x < 7 && found:
				read.Version = &api.Version{Block: cur.Block, Tx: cur.Tx}
			case x < 9 && block > 0:
				read.Version = &api.Version{Block: uint64(rng.Int63n(int64(block))), Tx: uint32(rng.Intn(3))}
			}
			get(ns).Reads = append(get(ns).Reads, read)
		}
		if rng.Intn(6) == 0 {
			ns := propNamespaces[rng.Intn(2)]
			lo, hi := rng.Intn(8), rng.Intn(9)
			start, end := fmt.Sprint("k", lo), ""
			if hi > lo {
				end = fmt.Sprint("k", hi)
			}
			limit := -1
			if rng.Intn(3) == 0 {
				limit = 1 + rng.Intn(3)
			}
			seen, err := v.scan(v.db, ns, start, end, limit)
			if err != nil {
				t.Fatal(err)
			}
			rr := &api.RangeRead{StartKey: start, EndKey: end, Exhausted: limit < 0 || len(seen) < limit}
			for _, kv := range seen {
				rr.Reads = append(rr.Reads, &api.KVRead{Key: kv.key, Version: &api.Version{Block: kv.value.Version.Block, Tx: kv.value.Version.Tx}})
			}
			get(ns).RangeReads = append(get(ns).RangeReads, rr)
		}
		for w := rng.Intn(4); w > 0; w-- {
			ns, k := key()
			get(ns).Writes = append(get(ns).Writes, &api.KVWrite{Key: k, Value: []byte(fmt.Sprint(block, ".", i)), IsDelete: rng.Intn(5) == 0})
		}
		txs[i] = txWork{rw: rw, ver: statedb.Version{Block: block, Tx: uint32(i)}}
		if rng.Intn(10) == 0 {
			txs[i].code = api.TxValidationCode_BAD_CREATOR_SIGNATURE
		}
	}
	return txs
}
