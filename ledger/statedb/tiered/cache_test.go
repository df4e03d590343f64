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
