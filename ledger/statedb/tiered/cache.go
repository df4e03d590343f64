package tiered

import (
	"bytes"
	"container/list"
	"sync"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// cache is the local cache: the values (and absences) of recently read
// and written keys, bounded in bytes, least recently used evicted first.
//
// Invariant: every entry is the key's state at height, the state the
// cache describes. Apply moves height forward and updates the written
// keys in the same step (under DB's view lock), and put accepts a value
// only if it was read at the cache's height, so a reader that read
// before a batch cannot insert what the batch overwrote. Entries hold
// their own copy of the data; get hands out copies.
type cache struct {
	mu struct {
		sync.Mutex
		height uint64
		bytes  int64
		lru    list.List // of *cached, most recently used first
		items  map[string]*list.Element
	}
	max int64
}

// cached is one entry of the cache.
type cached struct {
	key   string // statedb.AppendKey(ns, key)
	val   statedb.Value
	found bool
}

// cachedOverhead approximates an entry's cost beyond key and data: the
// struct, its list element and map slot.
const cachedOverhead = 128

func (c *cached) size() int64 { return int64(len(c.key)+len(c.val.Data)) + cachedOverhead }

func newCache(max int64, height uint64) *cache {
	c := &cache{max: max}
	c.resetLocked(height)
	return c
}

func (c *cache) resetLocked(height uint64) {
	c.mu.height = height
	c.mu.bytes = 0
	c.mu.lru.Init()
	c.mu.items = make(map[string]*list.Element)
}

// reset empties the cache, which then describes the state at height.
func (c *cache) reset(height uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resetLocked(height)
}

// get returns the key's value (a copy) and whether it exists, if cached.
func (c *cache) get(key string) (v statedb.Value, found, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.mu.items[key]
	if !ok {
		return statedb.Value{}, false, false
	}
	c.mu.lru.MoveToFront(el)
	e := el.Value.(*cached)
	return statedb.Value{Data: bytes.Clone(e.val.Data), Version: e.val.Version}, e.found, true
}

// put caches a key's state as read at height; it is dropped if the cache
// has moved past height. put copies v's data.
func (c *cache) put(height uint64, key string, v statedb.Value, found bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if height != c.mu.height {
		return
	}
	c.setLocked(&cached{key: key, val: statedb.Value{Data: bytes.Clone(v.Data), Version: v.Version}, found: found})
}

// apply writes a batch applied at height through to the cache, which then
// describes height. Values are copied.
func (c *cache) apply(writes []statedb.Write, height uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.height = height
	for _, w := range writes {
		e := &cached{key: string(statedb.AppendKey(nil, w.Namespace, w.Key)), found: !w.Delete}
		if !w.Delete {
			e.val = statedb.Value{Data: bytes.Clone(w.Value), Version: w.Version}
		}
		c.setLocked(e)
	}
}

// setLocked inserts or replaces e, then evicts from the cold end until
// the cache is within its bound. An entry larger than the bound is not
// kept.
func (c *cache) setLocked(e *cached) {
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

// size returns the bytes the cache holds.
func (c *cache) size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.bytes
}
