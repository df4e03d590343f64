package tiered

import (
	"fmt"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// TestCache checks the cache's byte bound, its LRU order, and that a read
// from an older height is not cached once a batch moved the cache on.
func TestCache(t *testing.T) {
	c := NewCache(3*(cachedOverhead+11), 1)
	var writes []statedb.Write
	for i := range 4 {
		writes = append(writes, statedb.Write{Namespace: "n", Key: fmt.Sprintf("k%d", i), Value: []byte("0123456")})
	}
	c.Apply(writes[:3], 2) // each entry: 4-byte key ("n\x00k0") + 7 bytes
	if _, _, ok := c.Get(string(statedb.AppendKey(nil, "n", "k0"))); !ok {
		t.Fatal("k0 not cached after apply")
	}
	c.Apply(writes[3:], 3) // evicts the least recently used: k1
	if _, _, ok := c.Get(string(statedb.AppendKey(nil, "n", "k1"))); ok {
		t.Fatal("k1 still cached: want it evicted as least recently used")
	}
	if got, max := c.Size(), int64(3*(cachedOverhead+11)); got > max {
		t.Fatalf("cache holds %d bytes, bound %d", got, max)
	}
	k9 := string(statedb.AppendKey(nil, "n", "k9"))
	c.Put(2, k9, statedb.Value{}, false) // read before height 3 was applied
	if _, _, ok := c.Get(k9); ok {
		t.Fatal("a read from height 2 was cached at height 3")
	}
	c.Put(3, k9, statedb.Value{}, false)
	if _, found, ok := c.Get(k9); !ok || found {
		t.Fatalf("absence read at the cache's height: cached %v found %v; want cached absent", ok, found)
	}
}

// TestCacheInvalidate: Invalidate drops the named keys, moves the cache
// to the batch's height (so a read from before it is not cached) and
// counts the dropped entries handed out since the batch's publication.
func TestCacheInvalidate(t *testing.T) {
	enc := func(k string) string { return string(statedb.AppendKey(nil, "n", k)) }
	c := NewCache(1<<20, 5)
	for _, k := range []string{"a", "b", "c"} {
		c.Put(5, enc(k), statedb.Value{Data: []byte(k), Version: statedb.Version{Block: 4}}, true)
	}
	c.GetAt(enc("a"), 100) // before the batch was published (at 150)
	c.GetAt(enc("b"), 200) // after: a stale hit
	keys := func(yield func(string) bool) {
		for _, k := range []string{"a", "b", "not-cached"} {
			if !yield(enc(k)) {
				return
			}
		}
	}
	if stale := c.Invalidate(7, keys, 150); stale != 1 {
		t.Errorf("Invalidate counted %d stale hits, want 1 (b)", stale)
	}
	for k, want := range map[string]bool{"a": false, "b": false, "c": true} {
		if _, _, ok := c.Get(enc(k)); ok != want {
			t.Errorf("after Invalidate, %s cached %v, want %v", k, ok, want)
		}
	}
	if h := c.Height(); h != 7 {
		t.Errorf("height %d after Invalidate at 7", h)
	}
	c.Put(5, enc("a"), statedb.Value{Data: []byte("old")}, true)
	if _, _, ok := c.Get(enc("a")); ok {
		t.Error("a read from height 5 was cached after the invalidation at 7")
	}
	if got, want := c.Size(), (&cached{key: enc("c"), val: statedb.Value{Data: []byte("c")}}).size(); got != want {
		t.Errorf("size %d after dropping two of three entries, want %d", got, want)
	}
}
