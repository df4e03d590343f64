package tiered

import (
	"fmt"
	"math/rand/v2"
	"sort"
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
	k3 := string(statedb.AppendKey(nil, "n", "k3"))
	if c.Put(2, k3, statedb.Value{}, false) { // read before height 3 was applied, which wrote k3
		t.Fatal("Put of k3 read at height 2 kept at height 3, which wrote it")
	}
	if v, found, ok := c.Get(k3); !ok || !found || string(v.Data) != "0123456" {
		t.Fatalf("k3 after a stale Put: %q found %v cached %v; want the batch's value", v.Data, found, ok)
	}
	k9 := string(statedb.AppendKey(nil, "n", "k9"))
	if !c.Put(2, k9, statedb.Value{}, false) { // height 3 did not write k9: its state at 2 is its state at 3
		t.Fatal("Put of k9 read at height 2 dropped at height 3, which did not write it")
	}
	if _, found, ok := c.Get(k9); !ok || found {
		t.Fatalf("absence read at height 2: cached %v found %v; want cached absent", ok, found)
	}
	if c.Put(4, k9, statedb.Value{Data: []byte("x")}, true) {
		t.Fatal("Put of a read above the cache's height kept")
	}
	if c.Put(0, k9, statedb.Value{Data: []byte("x")}, true) {
		t.Fatal("Put of a read below the log (height 0, the cache began at 1) kept")
	}
	if _, found, _ := c.Get(k9); found {
		t.Fatal("k9 replaced by a dropped Put")
	}
}

// TestCachePutBehind checks the rule for values read below the cache's
// height against a model: batches of random writes are applied while
// reads of random keys at earlier heights come back late, and after
// each such Put the key's entry, if any, is its state at the cache's
// height (an entry only Put can make wrong: Apply writes the batch's
// values). Enough keys are written that the log of written keys turns
// over.
func TestCachePutBehind(t *testing.T) {
	const keys = 20000
	enc := func(k int) string { return string(statedb.AppendKey(nil, "n", fmt.Sprint(k))) }
	written := make([][]uint64, keys) // key → the heights of the batches that wrote it, ascending
	// at returns key k's state at height h: the value the last batch at
	// or below h wrote (its height), if any.
	at := func(k int, h uint64) (uint64, bool) {
		i := sort.Search(len(written[k]), func(i int) bool { return written[k][i] > h })
		if i == 0 {
			return 0, false
		}
		return written[k][i-1], true
	}
	c := NewCache(1<<30, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	kept, dropped := 0, 0
	for h := uint64(1); h <= 400; h++ {
		var writes []statedb.Write
		for range 1 + rng.IntN(80) {
			k := rng.IntN(keys)
			if n := len(written[k]); n == 0 || written[k][n-1] != h {
				written[k] = append(written[k], h)
			}
			writes = append(writes, statedb.Write{Namespace: "n", Key: fmt.Sprint(k), Value: []byte(fmt.Sprint(h)), Version: statedb.Version{Block: h}})
		}
		c.Apply(writes, h)
		for range 20 { // reads that began at an earlier height and return now
			read := uint64(rng.IntN(int(h) + 1))
			k := rng.IntN(keys)
			v, found := at(k, read)
			val := statedb.Value{}
			if found {
				val = statedb.Value{Data: []byte(fmt.Sprint(v)), Version: statedb.Version{Block: v}}
			}
			if c.Put(read, enc(k), val, found) {
				kept++
			} else {
				dropped++
			}
			got, found, ok := c.Get(enc(k))
			if !ok {
				continue
			}
			want, wantFound := at(k, h)
			if found != wantFound || (found && string(got.Data) != fmt.Sprint(want)) {
				t.Fatalf("height %d: key %d read at %d cached as %q (found %v), its state is %d (found %v)", h, k, read, got.Data, found, want, wantFound)
			}
		}
	}
	if kept == 0 || dropped == 0 || c.mu.since == 0 {
		t.Fatalf("%d reads behind kept, %d dropped, the log begins at %d: want both kinds and a log turned over (the test would not check the rule)",
			kept, dropped, c.mu.since)
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

// TestCachePutVersion: an entry of PutVersion answers VersionAt, not
// Get; a value Put over it replaces it, and PutVersion keeps an entry
// that holds the value; the height rule is Put's.
func TestCachePutVersion(t *testing.T) {
	enc := func(k string) string { return string(statedb.AppendKey(nil, "n", k)) }
	c := NewCache(1<<20, 3)
	if !c.PutVersion(3, enc("a"), statedb.Version{Block: 2}, true) || !c.PutVersion(3, enc("gone"), statedb.Version{}, false) {
		t.Fatal("PutVersion at the cache's height dropped")
	}
	if ver, found, ok := c.VersionAt(enc("a"), 0); !ok || !found || ver != (statedb.Version{Block: 2}) {
		t.Errorf("VersionAt(a) = %v, %v, %v; want 2:0, found, cached", ver, found, ok)
	}
	if _, found, ok := c.VersionAt(enc("gone"), 0); !ok || found {
		t.Errorf("VersionAt(gone) found %v cached %v; want cached absent", found, ok)
	}
	if _, _, ok := c.Get(enc("a")); ok {
		t.Error("Get answered from an entry without the value")
	}
	c.Put(3, enc("a"), statedb.Value{Data: []byte("va"), Version: statedb.Version{Block: 2}}, true)
	c.PutVersion(3, enc("a"), statedb.Version{Block: 2}, true)
	if v, _, ok := c.Get(enc("a")); !ok || string(v.Data) != "va" {
		t.Errorf("Get(a) after Put and PutVersion = %q, %v; want the value kept", v.Data, ok)
	}
	c.Apply([]statedb.Write{{Namespace: "n", Key: "b", Value: []byte("vb"), Version: statedb.Version{Block: 3}}}, 4)
	if c.PutVersion(3, enc("b"), statedb.Version{Block: 1}, true) {
		t.Error("PutVersion of b read at 3 kept after the batch to 4 wrote b")
	}
	if ver, _, _ := c.VersionAt(enc("b"), 0); ver != (statedb.Version{Block: 3}) {
		t.Errorf("VersionAt(b) = %v; want the batch's 3:0", ver)
	}
	if !c.PutVersion(3, enc("c"), statedb.Version{Block: 1}, true) {
		t.Error("PutVersion of c read at 3 dropped after a batch that did not write c")
	}
}
