package tiered

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/google/btree"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// memoryTier is what DB needs of the memory tier. The in-process tier
// (localTier) implements it now; a memory node reached over the network
// will implement it later, so it names versions and heights, never the
// tier's data structures.
//
// Contract: Apply and Settle are called by one goroutine at a time (DB
// holds its view lock around both); View may be called at any time, and
// a view, once returned, never changes.
type memoryTier interface {
	// Apply makes writes the newest versions, written at height, and
	// publishes height; height is above every height applied before.
	Apply(writes []statedb.Write, height uint64)
	// View returns the published state.
	View() memView
	// Pending returns the batches applied above height, oldest first:
	// what the storage tier does not hold yet.
	Pending(above uint64) []pendingBatch
	// Settle records that the storage tier holds every version written
	// at or below durable: it forgets those pending batches, and drops
	// the versions of the keys named in evict that were written at or
	// below durable (a key written since keeps its newer version). It
	// returns how many versions it dropped.
	Settle(durable uint64, evict []string) int
}

// memView is an immutable state of the memory tier.
type memView interface {
	// Height is the savepoint of the view: the blocks applied.
	Height() uint64
	// Bytes is what the tier held at this view.
	Bytes() int64
	// Get returns the version of the encoded key, if the tier has it,
	// and counts the read for eviction.
	Get(key string) (entry, bool)
	// Ascend calls fn for the tier's versions with lo <= key < hi in
	// ascending order, until fn returns false.
	Ascend(lo, hi string, fn func(entry) bool)
	// Cold returns the versions written at or below durable, with their
	// sizes and last use: what eviction may drop.
	Cold(durable uint64) []candidate
}

// entry is one key's newest version in the memory tier: a value or, when
// deleted, a tombstone that hides the key's older version in storage.
type entry struct {
	key     string // statedb.AppendKey(ns, key)
	data    []byte // owned by the tier, never handed out
	ver     statedb.Version
	deleted bool
	height  uint64         // the height of the Apply that wrote it
	touched *atomic.Uint64 // the tier's clock at the last read or write
}

// entryOverhead approximates the bytes an entry costs beyond its key and
// data: the struct, its B-tree slot and its clock.
const entryOverhead = 96

func (e entry) size() int64 { return int64(len(e.key)+len(e.data)) + entryOverhead }

// value returns a caller-owned copy of the entry's value.
func (e entry) value() statedb.Value {
	return statedb.Value{Data: bytes.Clone(e.data), Version: e.ver}
}

func entryLess(a, b entry) bool { return a.key < b.key }

// pendingBatch is one applied batch the storage tier does not hold yet.
// Its values are owned by the tier and never modified.
type pendingBatch struct {
	height uint64
	writes []statedb.Write
}

// localTier is the in-process memory tier: a copy-on-write B-tree of
// entries, published as immutable versions (as memdb's).
//
// Invariants: every key written above the storage savepoint has its
// newest version in the tree (Settle drops only versions at or below
// durable); bytes is the sum of the tree's entry sizes.
type localTier struct {
	clock atomic.Uint64
	cur   atomic.Pointer[localView]
	mu    struct {
		sync.Mutex
		work    *btree.BTreeG[entry] // the writer's tree; equals cur's between calls
		bytes   int64
		pending []pendingBatch
	}
}

var _ memoryTier = (*localTier)(nil)

// newLocalTier returns an empty tier at height: the storage savepoint.
func newLocalTier(height uint64) *localTier {
	t := &localTier{}
	t.mu.work = btree.NewG(16, entryLess)
	t.publishLocked(height)
	return t
}

func (t *localTier) publishLocked(height uint64) {
	t.cur.Store(&localView{tree: t.mu.work.Clone(), height: height, bytes: t.mu.bytes, clock: &t.clock})
}

// Apply implements memoryTier.
func (t *localTier) Apply(writes []statedb.Write, height uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	owned := make([]statedb.Write, len(writes))
	for i, w := range writes {
		w.Value = bytes.Clone(w.Value)
		owned[i] = w
		touched := new(atomic.Uint64)
		touched.Store(t.clock.Add(1))
		e := entry{key: string(statedb.AppendKey(nil, w.Namespace, w.Key)), data: w.Value,
			ver: w.Version, deleted: w.Delete, height: height, touched: touched}
		if old, ok := t.mu.work.ReplaceOrInsert(e); ok {
			t.mu.bytes -= old.size()
		}
		t.mu.bytes += e.size()
	}
	t.mu.pending = append(t.mu.pending, pendingBatch{height: height, writes: owned})
	t.publishLocked(height)
}

// View implements memoryTier.
func (t *localTier) View() memView { return t.cur.Load() }

// Pending implements memoryTier.
func (t *localTier) Pending(above uint64) []pendingBatch {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []pendingBatch
	for _, b := range t.mu.pending {
		if b.height > above {
			out = append(out, b)
		}
	}
	return out
}

// Settle implements memoryTier.
func (t *localTier) Settle(durable uint64, evict []string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for n < len(t.mu.pending) && t.mu.pending[n].height <= durable {
		n++
	}
	t.mu.pending = append(t.mu.pending[:0], t.mu.pending[n:]...)
	dropped := 0
	for _, k := range evict {
		if e, ok := t.mu.work.Get(entry{key: k}); ok && e.height <= durable {
			t.mu.work.Delete(e)
			t.mu.bytes -= e.size()
			dropped++
		}
	}
	t.publishLocked(t.cur.Load().height)
	return dropped
}

// localView is one published state of a localTier.
type localView struct {
	tree   *btree.BTreeG[entry]
	height uint64
	bytes  int64
	clock  *atomic.Uint64
}

func (v *localView) Height() uint64 { return v.height }

func (v *localView) Bytes() int64 { return v.bytes }

func (v *localView) Get(key string) (entry, bool) {
	e, ok := v.tree.Get(entry{key: key})
	if ok {
		e.touched.Store(v.clock.Add(1))
	}
	return e, ok
}

func (v *localView) Ascend(lo, hi string, fn func(entry) bool) {
	v.tree.AscendRange(entry{key: lo}, entry{key: hi}, fn)
}

func (v *localView) Cold(durable uint64) []candidate {
	var out []candidate
	v.tree.Ascend(func(e entry) bool {
		if e.height <= durable {
			out = append(out, candidate{key: e.key, bytes: e.size(), touched: e.touched.Load()})
		}
		return true
	})
	return out
}
