package committer

import (
	"bytes"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// view is committed state as stage 2 must see it: the state database plus
// an overlay of the writes that stage 2 applied and stage 3 has not yet
// persisted. Stage 2 writes the overlay; stage 3 prunes it after the state
// database holds the same values. Safe for concurrent use.
//
// A prune moves the entries it drops into a bounded cache of persisted
// values (kept), so that the reads of hot keys — the endorsers' and stage
// 2's, several per transaction — cost a map lookup instead of a search of
// the database's memtable and tables. Invariant: a kept entry equals the
// database's value of its key. It holds because every state write goes
// through the overlay first (stage 2), prunes run in block order after the
// database applied the blocks pruned, the overlay holds only the latest
// write of a key, and a delete drops the key from the cache. Eviction only
// sends a read back to the database, which holds the same value.
type view struct {
	db statedb.DB // endorsers' reads
	// checkDB is the database as stage 2 reads it (Committer.patient);
	// it holds the same state as db.
	checkDB statedb.DB
	shards  [overlayShards]overlayShard
	// keptMax bounds each shard's kept bytes; 0 keeps nothing.
	keptMax int
	// pruneGen counts prunes; a prune increments it before it deletes
	// any entry (see blockReads).
	pruneGen atomic.Uint64
}

const overlayShards = 64

type overlayShard struct {
	mu        sync.RWMutex
	m         map[string]overlayEntry // encoded key (statedb.AppendKey) → entry
	kept      map[string]keptEntry    // encoded key → persisted value (see view)
	keptBytes int
}

type overlayEntry struct {
	value   []byte
	version statedb.Version
	deleted bool
}

type keptEntry struct {
	value   []byte // owned: never aliases a block
	version statedb.Version
}

// keptOverhead approximates a kept entry's memory beyond its key and
// value bytes: map slot, string and slice headers, version.
const keptOverhead = 64

func keptSize(key string, e keptEntry) int { return len(key) + len(e.value) + keptOverhead }

// newView returns a view over db whose cache of persisted values holds
// about cacheBytes (0: none).
func newView(db statedb.DB, cacheBytes int64) *view {
	v := &view{db: db, checkDB: db, keptMax: int(cacheBytes / overlayShards)}
	for i := range v.shards {
		v.shards[i].m = make(map[string]overlayEntry)
		v.shards[i].kept = make(map[string]keptEntry)
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

// lookup returns what the overlay or the cache knows of an encoded key.
func (s *overlayShard) lookup(enc []byte) (e overlayEntry, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e, ok = s.m[string(enc)]; ok {
		return e, true
	}
	k, ok := s.kept[string(enc)]
	return overlayEntry{value: k.value, version: k.version}, ok
}

// version returns the committed version of (ns, key); found is false when
// the key does not exist. It reads the overlay and the cache, then pre
// (nil: none, see blockReads), then the database (its GetVersions where it
// has one). buf is scratch space for the encoded key.
func (v *view) version(ns, key string, pre *blockReads, buf *[]byte) (ver statedb.Version, found bool, err error) {
	*buf = statedb.AppendKey((*buf)[:0], ns, key)
	if e, ok := v.shard(*buf).lookup(*buf); ok {
		return e.version, !e.deleted, nil
	}
	if r, ok := pre.lookup(v, *buf); ok { // after the overlay: see blockReads
		return r.Version, r.Found, nil
	}
	if vg, ok := v.checkDB.(statedb.VersionGetter); ok {
		// Only the version: a database whose values travel (a memory
		// node's client) does not fetch, copy and cache a value that
		// MVCC drops.
		var out [1]statedb.VersionResult
		err := vg.GetVersions([]statedb.Key{{Namespace: ns, Key: key}}, out[:])
		return out[0].Version, out[0].Found, err
	}
	val, found, err := v.checkDB.Get(ns, key)
	return val.Version, found, err
}

// holds reports whether the overlay or the cache holds the encoded key.
func (v *view) holds(enc []byte) bool {
	_, ok := v.shard(enc).lookup(enc)
	return ok
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
// state database now holds, into the cache; entries rewritten by later
// blocks stay.
func (v *view) prune(height uint64) {
	v.pruneGen.Add(1)
	for i := range v.shards {
		s := &v.shards[i]
		s.mu.Lock()
		for k, e := range s.m {
			if e.version.Block < height {
				delete(s.m, k)
				v.keep(s, k, e)
			}
		}
		s.mu.Unlock()
	}
}

// keep caches a pruned entry in s, whose lock the caller holds, evicting
// arbitrary entries (Go's map order) while the shard is over its bound.
func (v *view) keep(s *overlayShard, k string, e overlayEntry) {
	if old, ok := s.kept[k]; ok {
		s.keptBytes -= keptSize(k, old)
		delete(s.kept, k)
	}
	size := keptSize(k, keptEntry{value: e.value})
	if e.deleted || size > v.keptMax/8 { // a large value would flush the shard
		return
	}
	for victim, ve := range s.kept {
		if s.keptBytes+size <= v.keptMax {
			break
		}
		s.keptBytes -= keptSize(victim, ve)
		delete(s.kept, victim)
	}
	s.kept[k] = keptEntry{value: bytes.Clone(e.value), version: e.version}
	s.keptBytes += size
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

// keyValue is one key seen by a range scan.
type keyValue struct {
	key   string
	value statedb.Value
}

// get returns the committed value of (ns, key): the overlay's if it holds
// the key, else the state database's.
func (v *view) get(ns, key string) (statedb.Value, bool, error) {
	enc := statedb.AppendKey(nil, ns, key)
	if e, ok := v.shard(enc).lookup(enc); ok {
		if e.deleted {
			return statedb.Value{}, false, nil
		}
		return statedb.Value{Data: append([]byte(nil), e.value...), Version: e.version}, true, nil
	}
	return v.db.Get(ns, key)
}

// getMany is get for several keys: the overlay's answers, and one
// GetMany of the state database for the keys it does not hold, so that
// a database whose reads are messages (a memory node's client) sends
// one for the lot instead of one per key.
func (v *view) getMany(keys []statedb.Key, out []statedb.Result) error {
	if len(keys) != len(out) {
		return fmt.Errorf("%w: %d keys, %d results", statedb.ErrLengthsMismatch, len(keys), len(out))
	}
	var miss []statedb.Key // in the order of keys
	var at []int           // their index in keys
	var enc []byte
	for i, k := range keys {
		enc = statedb.AppendKey(enc[:0], k.Namespace, k.Key)
		if e, ok := v.shard(enc).lookup(enc); ok {
			out[i] = statedb.Result{}
			if !e.deleted {
				out[i] = statedb.Result{Value: statedb.Value{Data: append([]byte(nil), e.value...), Version: e.version}, Found: true}
			}
			continue
		}
		miss = append(miss, k)
		at = append(at, i)
	}
	if len(miss) == 0 {
		return nil
	}
	if len(miss) == len(keys) {
		return v.db.GetMany(keys, out)
	}
	res := make([]statedb.Result, len(miss))
	if err := v.db.GetMany(miss, res); err != nil {
		return err
	}
	for j, i := range at {
		out[i] = res[j]
	}
	return nil
}

// scan returns the keys of ns in [start, end) with their committed values,
// ascending, at most limit of them (limit < 0: no limit). It merges the
// state database with the overlay; the overlay is small (only unpersisted
// blocks), and range reads are rare, so the overlay is searched whole
// rather than kept sorted on every write.
func (v *view) scan(db statedb.DB, ns, start, end string, limit int) ([]keyValue, error) {
	var fromDB []keyValue
	err := db.Scan(ns, start, end, func(key string, val statedb.Value) bool {
		fromDB = append(fromDB, keyValue{key, val})
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
			merged = append(merged, keyValue{k, statedb.Value{Data: append([]byte(nil), e.value...), Version: e.version}})
		}
	}
	sort.Slice(merged, func(i, j int) bool { return merged[i].key < merged[j].key })
	if limit >= 0 && len(merged) > limit {
		merged = merged[:limit]
	}
	return merged, nil
}

// StateView reads the freshest committed state a peer has: the state
// database plus the writes of blocks that are validated but not yet
// persisted (which every peer validates identically, so reading them is
// as safe as reading persisted state). Endorsers simulate against it.
type StateView struct{ v *view }

// State returns the committer's view of committed state.
func (c *Committer) State() StateView { return StateView{c.view} }

// Get returns the value of (ns, key) and whether it exists.
func (s StateView) Get(ns, key string) (statedb.Value, bool, error) { return s.v.get(ns, key) }

// GetMany looks up keys[i] into out[i] (len(out) must equal len(keys)),
// each as Get would, the keys the overlay does not hold in one read of
// the state database.
func (s StateView) GetMany(keys []statedb.Key, out []statedb.Result) error {
	return s.v.getMany(keys, out)
}

// Scan calls fn for each key of ns in [start, end) in ascending order (an
// empty end: to the end of the namespace) until fn returns false.
func (s StateView) Scan(ns, start, end string, fn func(key string, v statedb.Value) bool) error {
	kvs, err := s.v.scan(s.v.db, ns, start, end, -1)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		if !fn(kv.key, kv.value) {
			return nil
		}
	}
	return nil
}
