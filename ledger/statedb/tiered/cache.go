package tiered

import (
	"bytes"
	"container/list"
	"sync"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// Cache is the local cache: the values (and absences) of recently read
// and written keys, bounded in bytes, least recently used evicted first.
// The tiered DB keeps one in front of its memory tier, and a compute
// node keeps one in front of a memory node it reaches over the network
// (package memnode). A nil *Cache caches nothing: Get always misses.
//
// Invariant: every entry is the key's state at height, the state the
// cache describes. Apply (or Invalidate) moves height forward and
// updates (drops) the written keys in the same step (under the owner's
// view lock), and Put accepts a value read at height h only if h is the
// cache's height, or h is below it, at or above since, and no batch
// that moved the cache above h wrote the key (the log of written keys,
// type written): then the key's state at h is its state at height. So
// a reader that read before a batch cannot insert what the batch
// overwrote, and a read that returns after an unrelated batch still
// fills the cache (under load a batch lands during most remote reads).
// An entry of PutVersion holds the key's version (or absence) at height
// without its value: it answers VersionAt, and Get misses it. Keys are
// encoded (statedb.AppendKey). Entries hold their own copy of the data;
// Get hands out copies.
type Cache struct {
	mu struct {
		sync.Mutex
		height uint64
		bytes  int64
		lru    list.List // of *cached, most recently used first
		items  map[string]*list.Element
		written
	}
	max int64
}

// written is the log of the keys the recent batches wrote, for Put of
// a value read below the cache's height. Invariant: every batch that
// moved the cache above since is in it: for each key it wrote, cur or
// prev holds the height that batch moved the cache to, or a higher
// one of a later batch. It keeps two generations of about
// writtenKeysMax keys each (a generation is closed at the first batch
// that finds it full, so one batch may take it over): when cur is
// full it becomes prev (the
// older prev and its batches are forgotten and since rises to where
// cur began), so the log's memory is bounded and Put of a read older
// than since is dropped, as every Put below the height was before.
type written struct {
	cur, prev map[string]uint64 // encoded key → height after the last batch that wrote it
	curFrom   uint64            // cur holds every batch that moved the cache above curFrom
	since     uint64
}

// writtenKeysMax bounds each generation of the log of written keys:
// with a few writes a block, thousands of blocks, far more than land
// during one remote read.
const writtenKeysMax = 4096

// logLocked records that a batch wrote key and moved the cache to
// height to; the caller rotated the log before the batch.
func (c *Cache) logLocked(key string, to uint64) {
	c.mu.cur[key] = to
}

// rotateLocked starts a new generation of the log if cur is full;
// called before a batch that moves the cache from its height is logged.
func (c *Cache) rotateLocked() {
	if len(c.mu.cur) < writtenKeysMax {
		return
	}
	c.mu.prev, c.mu.since = c.mu.cur, c.mu.curFrom
	c.mu.cur, c.mu.curFrom = make(map[string]uint64), c.mu.height
}

// putAllowedLocked reports whether a key's state read at h is its
// state at the cache's height (see Cache).
func (c *Cache) putAllowedLocked(h uint64, key string) bool {
	switch {
	case h == c.mu.height:
		return true
	case h > c.mu.height || h < c.mu.since:
		return false
	}
	return c.mu.cur[key] <= h && c.mu.prev[key] <= h
}

// cached is one entry of the cache.
type cached struct {
	key   string // statedb.AppendKey(ns, key)
	val   statedb.Value
	found bool
	// noData: val.Data is not held, only the version (PutVersion).
	noData bool
	hit    int64 // the caller's clock at the last GetAt; 0: none
}

// cachedOverhead approximates an entry's cost beyond key and data: the
// struct, its list element and map slot.
const cachedOverhead = 128

func (c *cached) size() int64 { return int64(len(c.key)+len(c.val.Data)) + cachedOverhead }

// NewCache returns an empty cache of at most max bytes that describes
// the state at height.
func NewCache(max int64, height uint64) *Cache {
	c := &Cache{max: max}
	c.resetLocked(height)
	return c
}

func (c *Cache) resetLocked(height uint64) {
	c.mu.height = height
	c.mu.bytes = 0
	c.mu.lru.Init()
	c.mu.items = make(map[string]*list.Element)
	c.mu.written = written{cur: make(map[string]uint64), curFrom: height, since: height}
}

// Reset empties the cache, which then describes the state at height.
func (c *Cache) Reset(height uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resetLocked(height)
}

// Get returns the key's value (a copy) and whether it exists, if cached.
func (c *Cache) Get(key string) (v statedb.Value, found, ok bool) { return c.GetAt(key, 0) }

// GetAt is Get that stamps the entry with now (the caller's clock, in
// Unix nanoseconds), for Invalidate's count of stale hits.
func (c *Cache) GetAt(key string, now int64) (v statedb.Value, found, ok bool) {
	if c == nil {
		return statedb.Value{}, false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.mu.items[key]
	if !ok || el.Value.(*cached).noData {
		return statedb.Value{}, false, false
	}
	c.mu.lru.MoveToFront(el)
	e := el.Value.(*cached)
	e.hit = max(e.hit, now)
	return statedb.Value{Data: bytes.Clone(e.val.Data), Version: e.val.Version}, e.found, true
}

// VersionAt is GetAt for a reader that wants only the version (an MVCC
// check): it copies no data.
func (c *Cache) VersionAt(key string, now int64) (ver statedb.Version, found, ok bool) {
	if c == nil {
		return statedb.Version{}, false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.mu.items[key]
	if !ok {
		return statedb.Version{}, false, false
	}
	c.mu.lru.MoveToFront(el)
	e := el.Value.(*cached)
	e.hit = max(e.hit, now)
	return e.val.Version, e.found, true
}

// Put caches a key's state as read at height. It is dropped, and Put
// returns false, if that may not be the key's state at the height the
// cache describes: read above it, below the log of written keys, or
// the key written since (see Cache). A key read below the cache's
// height that the cache holds already keeps its entry (the same
// state). Put copies v's data.
func (c *Cache) Put(height uint64, key string, v statedb.Value, found bool) bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.putAllowedLocked(height, key) {
		return false
	}
	if el, ok := c.mu.items[key]; ok && height != c.mu.height && !el.Value.(*cached).noData {
		c.mu.lru.MoveToFront(el)
		return true
	}
	c.setLocked(&cached{key: key, val: statedb.Value{Data: bytes.Clone(v.Data), Version: v.Version}, found: found})
	return true
}

// PutVersion caches a key's version (found false: its absence) as read
// at height, without its value, by the rule of Put, for VersionAt: a
// committer's MVCC check of a key no endorsement read here, such as a
// contract's definition, then costs a remote read once, not once a
// block. An entry that holds the value is kept as it is.
func (c *Cache) PutVersion(height uint64, key string, ver statedb.Version, found bool) bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.putAllowedLocked(height, key) {
		return false
	}
	if el, ok := c.mu.items[key]; ok && !el.Value.(*cached).noData {
		c.mu.lru.MoveToFront(el)
		return true
	}
	c.setLocked(&cached{key: key, val: statedb.Value{Version: ver}, found: found, noData: true})
	return true
}

// Apply writes a batch applied at height through to the cache, which
// then describes height. Values are copied.
func (c *Cache) Apply(writes []statedb.Write, height uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rotateLocked()
	c.mu.height = height
	for _, w := range writes {
		e := &cached{key: string(statedb.AppendKey(nil, w.Namespace, w.Key)), found: !w.Delete}
		if !w.Delete {
			e.val = statedb.Value{Data: bytes.Clone(w.Value), Version: w.Version}
		}
		c.logLocked(e.key, height)
		c.setLocked(e)
	}
}

// Invalidate drops the keys keys yields (encoded) from the cache, which
// then describes height: the cache of a reader that does not apply the
// batches itself, told of each batch's keys by a change feed, in order.
// It returns how many of the dropped entries a GetAt stamped at or after
// since (the batch's publication, on the caller's clock): hits that
// handed out a version the batch had already replaced at its source.
func (c *Cache) Invalidate(height uint64, keys func(yield func(string) bool), since int64) (stale int) {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rotateLocked()
	c.mu.height = height
	for k := range keys {
		c.logLocked(k, height)
		el, ok := c.mu.items[k]
		if !ok {
			continue
		}
		e := el.Value.(*cached)
		if e.hit != 0 && e.hit >= since {
			stale++
		}
		c.mu.bytes -= e.size()
		c.mu.lru.Remove(el)
		delete(c.mu.items, k)
	}
	return stale
}

// Height returns the height the cache describes.
func (c *Cache) Height() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.height
}

// setLocked inserts or replaces e, then evicts from the cold end until
// the cache is within its bound. An entry larger than the bound is not
// kept.
func (c *Cache) setLocked(e *cached) {
	if el, ok := c.mu.items[e.key]; ok {
		c.mu.bytes -= el.Value.(*cached).size()
		c.mu.lru.Remove(el)
		delete(c.mu.items, e.key)
	}
	if e.size() > c.max {
		return
	}
	c.mu.items[e.key] = c.mu.lru.PushFront(e)
	c.mu.bytes += e.size()
	for c.mu.bytes > c.max {
		last := c.mu.lru.Back()
		old := last.Value.(*cached)
		c.mu.lru.Remove(last)
		delete(c.mu.items, old.key)
		c.mu.bytes -= old.size()
	}
}

// Size returns the bytes the cache holds.
func (c *Cache) Size() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.bytes
}
