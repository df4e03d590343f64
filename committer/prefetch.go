package committer

import (
	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// blockReads holds the database versions of the keys a block's
// candidate transactions read, fetched in one batched call
// (statedb.VersionGetter) before its MVCC checks, so that the backend
// reads them in one ordered pass instead of one lookup per read.
//
// Invariant: an entry is used only while the view's prune generation is
// the one read before the fetch began. Then every block persisted since
// the fetch still has its writes in the overlay, which version consults
// first, so where the overlay misses, the database held the fetched
// version all along. Once a prune ran, the entries may be stale and
// version goes to the database key by key.
type blockReads struct {
	gen uint64
	m   map[string]statedb.VersionResult // encoded key → version
}

// minBatchedReads is the fewest reads worth one batched call.
const minBatchedReads = 2

// fetchReads prefetches the versions the candidates of txs read and that
// neither the overlay nor its cache holds now. It returns nil when the
// database cannot batch (no statedb.VersionGetter) or there is too little
// to fetch.
func (v *view) fetchReads(txs []txWork) (*blockReads, error) {
	vg, ok := v.checkDB.(statedb.VersionGetter)
	if !ok {
		return nil, nil
	}
	r := &blockReads{gen: v.pruneGen.Load()}
	var keys []statedb.Key
	var encs []string
	var buf []byte
	for i := range txs {
		if txs[i].code != api.TxValidationCode_VALID {
			continue
		}
		for _, ns := range txs[i].rw.Namespaces {
			for _, rd := range ns.Reads {
				buf = statedb.AppendKey(buf[:0], ns.Namespace, rd.Key)
				if v.holds(buf) {
					continue
				}
				if r.m == nil {
					r.m = make(map[string]statedb.VersionResult)
				}
				if _, dup := r.m[string(buf)]; dup {
					continue
				}
				enc := string(buf)
				r.m[enc] = statedb.VersionResult{}
				keys = append(keys, statedb.Key{Namespace: ns.Namespace, Key: rd.Key})
				encs = append(encs, enc)
			}
		}
	}
	if len(keys) < minBatchedReads {
		return nil, nil
	}
	out := make([]statedb.VersionResult, len(keys))
	if err := vg.GetVersions(keys, out); err != nil {
		return nil, err
	}
	for i, enc := range encs {
		r.m[enc] = out[i]
	}
	return r, nil
}

// lookup returns the fetched version of the encoded key, if r holds it
// and is still valid (see blockReads).
func (r *blockReads) lookup(v *view, enc []byte) (statedb.VersionResult, bool) {
	if r == nil || v.pruneGen.Load() != r.gen {
		return statedb.VersionResult{}, false
	}
	res, ok := r.m[string(enc)]
	return res, ok
}
