package committer

import (
	"sort"

	"github.com/strand-ledger/strand/api"
)

// graph is the dependency graph of one block's candidate transactions
// (FlexChain, seed 000, section 5). An edge a→b (a < b) means b must not
// start until a has finished: b reads a key a writes (read-after-write), b
// writes a key a reads (write-after-read), both write it (write-after-write),
// or a range read of one covers a key the other writes.
//
// It is built from a per-key index in one pass over the block, so its cost
// is linear in the number of reads and writes, not quadratic in the number
// of transactions. Duplicate edges are harmless: indeg counts each one.
type graph struct {
	succ       [][]int32
	indeg      []int32
	candidates int
}

// keyState is the per-key index: the last transaction that wrote the key
// and the transactions that read it since.
type keyState struct {
	lastWriter int32
	readers    []int32
}

// nsKey addresses a key without building a combined string.
type nsKey struct{ ns, key string }

func buildGraph(txs []txWork) *graph {
	g := &graph{succ: make([][]int32, len(txs)), indeg: make([]int32, len(txs))}
	slot := make(map[nsKey]int32, 4*len(txs))
	states := make([]keyState, 0, 4*len(txs))
	lookup := func(ns, key string) *keyState {
		i, ok := slot[nsKey{ns, key}]
		if !ok {
			i = int32(len(states))
			states = append(states, keyState{lastWriter: -1})
			slot[nsKey{ns, key}] = i
		}
		return &states[i]
	}
	hasRanges := false
	for i := range txs {
		if txs[i].code != api.TxValidationCode_VALID {
			continue
		}
		g.candidates++
		me := int32(i)
		for _, ns := range txs[i].rw.Namespaces {
			hasRanges = hasRanges || len(ns.RangeReads) > 0
			for _, r := range ns.Reads {
				ks := lookup(ns.Namespace, r.Key)
				if ks.lastWriter >= 0 && ks.lastWriter != me {
					g.edge(ks.lastWriter, me) // read after write
				}
				ks.readers = append(ks.readers, me)
			}
		}
		for _, ns := range txs[i].rw.Namespaces {
			for _, w := range ns.Writes {
				ks := lookup(ns.Namespace, w.Key)
				if ks.lastWriter >= 0 && ks.lastWriter != me {
					g.edge(ks.lastWriter, me) // write after write
				}
				for _, r := range ks.readers {
					if r != me {
						g.edge(r, me) // write after read
					}
				}
				ks.lastWriter, ks.readers = me, ks.readers[:0]
			}
		}
	}
	if hasRanges {
		g.addRangeEdges(txs)
	}
	return g
}

func (g *graph) edge(from, to int32) {
	g.succ[from] = append(g.succ[from], to)
	g.indeg[to]++
}

// addRangeEdges orders each range read against every other candidate that
// writes a key inside the range, using the block's writes sorted by key.
func (g *graph) addRangeEdges(txs []txWork) {
	type write struct {
		key string
		tx  int32
	}
	writes := map[string][]write{} // namespace → writes sorted by key
	for i := range txs {
		if txs[i].code != api.TxValidationCode_VALID {
			continue
		}
		for _, ns := range txs[i].rw.Namespaces {
			for _, w := range ns.Writes {
				writes[ns.Namespace] = append(writes[ns.Namespace], write{w.Key, int32(i)})
			}
		}
	}
	for _, ws := range writes {
		sort.Slice(ws, func(a, b int) bool { return ws[a].key < ws[b].key })
	}
	for i := range txs {
		if txs[i].code != api.TxValidationCode_VALID {
			continue
		}
		me := int32(i)
		for _, ns := range txs[i].rw.Namespaces {
			ws := writes[ns.Namespace]
			for _, rr := range ns.RangeReads {
				end, covered := rangeEnd(rr)
				if !covered {
					continue
				}
				j := sort.Search(len(ws), func(k int) bool { return ws[k].key >= rr.StartKey })
				for ; j < len(ws) && (end == "" || ws[j].key < end); j++ {
					switch w := ws[j].tx; {
					case w < me:
						g.edge(w, me)
					case w > me:
						g.edge(me, w)
					}
				}
			}
		}
	}
}
