package committer

import (
	"sort"
	"sync"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// view is committed state as stage 2 must see it: the state database plus
// an overlay of the writes that stage 2 applied and stage 3 has not yet
// persisted. Stage 2 writes the overlay; stage 3 prunes it after the state
// database holds the same values. Safe for concurrent use.
type view struct {
	db     statedb.DB
	shards [overlayShards]overlayShard
}

const overlayShards = 64

type overlayShard struct {
	mu sync.RWMutex
	m  map[string]overlayEntry // encoded key (statedb.AppendKey) → entry
}

type overlayEntry struct {
	value   []byte
	version statedb.Version
	deleted bool
}

func newView(db statedb.DB) *view {
	v := &view{db: db}
	for i := range v.shards {
		v.shards[i].m = make(map[string]overlayEntry)
	}
	return v
}

func (v *view) shard(enc []byte) *overlayShard {
	// FNV-1a over the encoded key: cheap and well spread.
	h := uint32(2166136261)
	for _, c := range enc {
		h = (h ^ uint32(c)) * 16777619
	}
	return &v.shards[h%overlayShards]
}

// version returns the committed version of (ns, key); found is false when
// the key does not exist. buf is scratch space for the encoded key.
func (v *view) version(ns, key string, buf *[]byte) (ver statedb.Version, found bool, err error) {
	*buf = statedb.AppendKey((*buf)[:0], ns, key)
	s := v.shard(*buf)
	s.mu.RLock()
	e, ok := s.m[string(*buf)]
	s.mu.RUnlock()
	if ok {
		return e.version, !e.deleted, nil
	}
	val, found, err := v.db.Get(ns, key)
	return val.Version, found, err
}

// put records a write in the overlay.
func (v *view) put(ns, key string, value []byte, deleted bool, ver statedb.Version, buf *[]byte) {
	*buf = statedb.AppendKey((*buf)[:0], ns, key)
	s := v.shard(*buf)
	s.mu.Lock()
	s.m[string(*buf)] = overlayEntry{value: value, version: ver, deleted: deleted}
	s.mu.Unlock()
}

// prune drops overlay entries written by blocks below height, which the
// state database now holds; entries rewritten by later blocks stay.
func (v *view) prune(height uint64) {
	for i := range v.shards {
		s := &v.shards[i]
		s.mu.Lock()
		for k, e := range s.m {
			if e.version.Block < height {
				delete(s.m, k)
			}
		}
		s.mu.Unlock()
	}
}

// size returns the number of overlay entries.
func (v *view) size() int {
	n := 0
	for i := range v.shards {
		s := &v.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

// keyVersion is one key seen by a range scan.
type keyVersion struct {
	key     string
	version statedb.Version
}

// scan returns the keys of ns in [start, end) with their committed
// versions, ascending, at most limit of them (limit < 0: no limit). It
// merges the state database with the overlay; the overlay is small (only
// unpersisted blocks), and range reads are rare, so the overlay is searched
// whole rather than kept sorted on every write.
func (v *view) scan(ns, start, end string, limit int) ([]keyVersion, error) {
	var fromDB []keyVersion
	err := v.db.Scan(ns, start, end, func(key string, val statedb.Value) bool {
		fromDB = append(fromDB, keyVersion{key, val.Version})
		return true
	})
	if err != nil {
		return nil, err
	}
	lo := statedb.AppendKey(nil, ns, start)
	var hi []byte
	if end != "" {
		hi = statedb.AppendKey(nil, ns, end)
	} else {
		hi = append([]byte(ns), 1) // first key past the namespace
	}
	over := map[string]overlayEntry{}
	for i := range v.shards {
		s := &v.shards[i]
		s.mu.RLock()
		for k, e := range s.m {
			if k >= string(lo) && k < string(hi) {
				over[k[len(ns)+1:]] = e
			}
		}
		s.mu.RUnlock()
	}
	merged := fromDB[:0:0]
	for _, kv := range fromDB {
		if _, ok := over[kv.key]; !ok {
			merged = append(merged, kv)
		}
	}
	for k, e := range over {
		if !e.deleted {
			merged = append(merged, keyVersion{k, e.version})
		}
	}
	sort.Slice(merged, func(i, j int) bool { return merged[i].key < merged[j].key })
	if limit >= 0 && len(merged) > limit {
		merged = merged[:limit]
	}
	return merged, nil
}
