package committer

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
)

// TestStateView: the view merges unpersisted writes over the database —
// overlay puts shadow the database, overlay deletes hide it, other
// namespaces never leak in — and prune hands keys back to the database.
func TestStateView(t *testing.T) {
	db := memdb.New()
	var b statedb.Batch
	b.Put("kv", "a", []byte("db-a"), statedb.Version{Block: 0})
	b.Put("kv", "b", []byte("db-b"), statedb.Version{Block: 0, Tx: 1})
	b.Put("kv", "c", []byte("db-c"), statedb.Version{Block: 0, Tx: 2})
	b.Put("kvx", "a", []byte("other"), statedb.Version{Block: 0})
	if err := db.Apply(&b, 1, false); err != nil {
		t.Fatal(err)
	}
	v := newView(db, 0)
	var buf []byte
	v.put("kv", "b", []byte("new-b"), false, statedb.Version{Block: 1}, &buf)
	v.put("kv", "c", nil, true, statedb.Version{Block: 1, Tx: 1}, &buf)
	v.put("kv", "d", []byte("new-d"), false, statedb.Version{Block: 2}, &buf)
	s := StateView{v}

	got := map[string]string{}
	if err := s.Scan("kv", "", "", func(k string, val statedb.Value) bool {
		got[k] = string(val.Data) + "@" + val.Version.String()
		return true
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "db-a@0:0", "b": "new-b@1:0", "d": "new-d@2:0"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Scan = %v, want %v", got, want)
	}
	if _, found, _ := s.Get("kv", "c"); found {
		t.Error("a key deleted in the overlay is still visible")
	}
	if val, found, _ := s.Get("kv", "b"); !found || string(val.Data) != "new-b" {
		t.Errorf("Get(b) = %q, %v", val.Data, found)
	}
	page, err := v.scan(v.db, "kv", "b", "", 1)
	if err != nil || len(page) != 1 || page[0].key != "b" {
		t.Fatalf("scan with limit = %v, %v", page, err)
	}
	v.prune(2) // blocks 0 and 1 are now in the database (pretend)
	if _, found, _ := s.Get("kv", "c"); !found {
		t.Error("after pruning block 1, the database's c shows again (as it should in this pretend setup)")
	}
	if val, _, _ := s.Get("kv", "d"); string(val.Data) != "new-d" {
		t.Error("prune dropped a write of a later block")
	}
}

// TestBlockReadsAfterPrune: versions fetched for a block are used while
// no prune ran; once stage 3 persisted a block that rewrote a fetched key
// and pruned it from the overlay, version reads the database again
// instead of the stale fetched version.
func TestBlockReadsAfterPrune(t *testing.T) {
	db := memdb.New()
	var b statedb.Batch
	b.Put("kv", "k", []byte("1"), statedb.Version{Block: 0})
	b.Put("kv", "j", []byte("1"), statedb.Version{Block: 0, Tx: 1})
	if err := db.Apply(&b, 1, false); err != nil {
		t.Fatal(err)
	}
	v := newView(db, 0)
	var buf []byte
	v.put("kv", "o", []byte("2"), false, statedb.Version{Block: 1}, &buf) // block 1, not yet persisted
	txs := []txWork{{rw: rwset("kv", reads(rd("k", ver(0, 0)), rd("j", ver(0, 1)), rd("o", ver(1, 0)))), code: api.TxValidationCode_VALID}}
	pre, err := v.fetchReads(txs)
	if err != nil || pre == nil {
		t.Fatalf("fetchReads = %v, %v", pre, err)
	}
	if _, ok := pre.m[string(statedb.AppendKey(nil, "kv", "o"))]; ok {
		t.Error("fetched a key the overlay holds")
	}
	want := func(key string, w statedb.Version) {
		t.Helper()
		got, found, err := v.version("kv", key, pre, &buf)
		if err != nil || !found || got != w {
			t.Fatalf("version(%s) = %v, %v, %v; want %v", key, got, found, err, w)
		}
	}
	want("k", statedb.Version{Block: 0})
	want("o", statedb.Version{Block: 1})
	// Stage 3 persists block 1, which also rewrote k, and prunes it.
	v.put("kv", "k", []byte("2"), false, statedb.Version{Block: 1, Tx: 1}, &buf)
	b.Reset()
	b.Put("kv", "o", []byte("2"), statedb.Version{Block: 1})
	b.Put("kv", "k", []byte("2"), statedb.Version{Block: 1, Tx: 1})
	if err := db.Apply(&b, 2, false); err != nil {
		t.Fatal(err)
	}
	v.prune(2)
	want("k", statedb.Version{Block: 1, Tx: 1})
	want("j", statedb.Version{Block: 0, Tx: 1})
}

// countingDB counts the reads that reach the database.
type countingDB struct {
	statedb.DB
	gets int
}

func (c *countingDB) Get(ns, key string) (statedb.Value, bool, error) {
	c.gets++
	return c.DB.Get(ns, key)
}

// TestStateCache: values that stage 3 persisted are read from the view's
// cache, not the database; a later write shadows a cached value until its
// own prune replaces it, and a delete removes the key from the cache.
func TestStateCache(t *testing.T) {
	db := &countingDB{DB: memdb.New()}
	v := newView(db, 1<<20)
	var buf []byte
	// block persists the writes as stage 3 would: database, then prune.
	block := func(n uint64, key, value string, deleted bool) {
		t.Helper()
		ver := statedb.Version{Block: n}
		v.put("kv", key, []byte(value), deleted, ver, &buf)
		var b statedb.Batch
		if deleted {
			b.Delete("kv", key, ver)
		} else {
			b.Put("kv", key, []byte(value), ver)
		}
		if err := db.Apply(&b, n+1, false); err != nil {
			t.Fatal(err)
		}
		v.prune(n + 1)
	}
	want := func(key, value string, found bool, dbReads int) {
		t.Helper()
		db.gets = 0
		got, ok, err := StateView{v}.Get("kv", key)
		if err != nil || ok != found || string(got.Data) != value {
			t.Fatalf("Get(%s) = %q, %v, %v; want %q, %v", key, got.Data, ok, err, value, found)
		}
		if _, ok, _ := v.version("kv", key, nil, &buf); ok != found {
			t.Fatalf("version(%s) found %v, want %v", key, ok, found)
		}
		if db.gets != 2*dbReads {
			t.Fatalf("Get and version of %s read the database %d times, want %d", key, db.gets, 2*dbReads)
		}
	}
	block(1, "a", "a1", false)
	want("a", "a1", true, 0)
	v.put("kv", "a", []byte("a2"), false, statedb.Version{Block: 2}, &buf) // applied, not persisted
	want("a", "a2", true, 0)
	block(2, "a", "a2", false)
	want("a", "a2", true, 0)
	block(3, "a", "", true)
	want("a", "", false, 1)
	want("never-written", "", false, 1)
}

// TestStateCacheBound: the cache stays within its bound, evicting as it
// goes, and an evicted key is read from the database with its value.
func TestStateCacheBound(t *testing.T) {
	db := &countingDB{DB: memdb.New()}
	v := newView(db, 64<<10) // 1 KiB a shard
	var buf []byte
	var b statedb.Batch
	const n = 5000
	for i := range n {
		key, ver := fmt.Sprintf("key%05d", i), statedb.Version{Block: 1, Tx: uint32(i)}
		v.put("kv", key, []byte("value-"+key), false, ver, &buf)
		b.Put("kv", key, []byte("value-"+key), ver)
	}
	if err := db.Apply(&b, 2, false); err != nil {
		t.Fatal(err)
	}
	v.prune(2)
	kept := 0
	for i := range v.shards {
		s := &v.shards[i]
		sum := 0
		for k, e := range s.kept {
			sum += keptSize(k, e)
		}
		if sum != s.keptBytes || sum > v.keptMax {
			t.Fatalf("shard %d: %d bytes kept, %d counted, bound %d", i, sum, s.keptBytes, v.keptMax)
		}
		kept += len(s.kept)
	}
	if kept == 0 || kept == n {
		t.Fatalf("%d of %d keys kept: want some, not all", kept, n)
	}
	db.gets = 0
	for i := range n {
		key := fmt.Sprintf("key%05d", i)
		if got, ok, err := (StateView{v}).Get("kv", key); err != nil || !ok || string(got.Data) != "value-"+key {
			t.Fatalf("Get(%s) = %q, %v, %v", key, got.Data, ok, err)
		}
	}
	if db.gets != n-kept {
		t.Fatalf("%d database reads for %d keys with %d cached", db.gets, n, kept)
	}
}

// versionsDB counts the database's Get calls and the keys GetVersions
// looks up.
type versionsDB struct {
	*memdb.DB
	gets, versions int
}

func (d *versionsDB) Get(ns, key string) (statedb.Value, bool, error) {
	d.gets++
	return d.DB.Get(ns, key)
}

func (d *versionsDB) GetVersions(keys []statedb.Key, out []statedb.VersionResult) error {
	d.versions += len(keys)
	return d.DB.GetVersions(keys, out)
}

// TestVersionReadsNoValue: a version the overlay, the cache and the
// prefetch do not hold is read with the database's GetVersions, not a Get
// of the whole value (a memory node's client would fetch, copy and cache
// a value MVCC drops); absent keys stay absent.
func TestVersionReadsNoValue(t *testing.T) {
	db := &versionsDB{DB: memdb.New()}
	var b statedb.Batch
	b.Put("kv", "k", []byte("a value MVCC does not need"), statedb.Version{Block: 3, Tx: 2})
	if err := db.Apply(&b, 4, false); err != nil {
		t.Fatal(err)
	}
	v := newView(db, 0)
	var buf []byte
	if got, found, err := v.version("kv", "k", nil, &buf); err != nil || !found || got != (statedb.Version{Block: 3, Tx: 2}) {
		t.Fatalf("version(k) = %v, %v, %v; want 3:2, found", got, found, err)
	}
	if _, found, err := v.version("kv", "absent", nil, &buf); err != nil || found {
		t.Fatalf("version(absent) found %v, %v; want not found", found, err)
	}
	if db.gets != 0 || db.versions != 2 {
		t.Fatalf("two versions read with %d Gets and %d keys of GetVersions; want 0 and 2", db.gets, db.versions)
	}
}

// manyDB counts the database's GetMany calls and their keys.
type manyDB struct {
	*memdb.DB
	calls, keys int
}

func (d *manyDB) GetMany(keys []statedb.Key, out []statedb.Result) error {
	d.calls++
	d.keys += len(keys)
	return d.DB.GetMany(keys, out)
}

// TestStateViewGetMany: GetMany answers each key as Get does (overlay
// puts and deletes over the database, absent keys absent, namespaces
// apart) and reads the keys the overlay does not hold in one GetMany of
// the database (an endorsement's reads on a memory node: one message),
// none when it holds them all; a length mismatch is a named error.
func TestStateViewGetMany(t *testing.T) {
	db := &manyDB{DB: memdb.New()}
	var b statedb.Batch
	b.Put("kv", "a", []byte("db-a"), statedb.Version{Block: 0})
	b.Put("kv", "b", []byte("db-b"), statedb.Version{Block: 0, Tx: 1})
	b.Put("kv", "c", []byte("db-c"), statedb.Version{Block: 0, Tx: 2})
	b.Put("kvx", "e", []byte("other"), statedb.Version{Block: 0})
	if err := db.Apply(&b, 1, false); err != nil {
		t.Fatal(err)
	}
	v := newView(db, 0)
	var buf []byte
	v.put("kv", "b", []byte("new-b"), false, statedb.Version{Block: 1}, &buf)
	v.put("kv", "c", nil, true, statedb.Version{Block: 1, Tx: 1}, &buf)
	v.put("kv", "d", []byte("new-d"), false, statedb.Version{Block: 2}, &buf)
	s := StateView{v}
	keys := []statedb.Key{{Namespace: "kv", Key: "d"}, {Namespace: "kv", Key: "a"}, {Namespace: "kv", Key: "c"},
		{Namespace: "kv", Key: "e"}, {Namespace: "kvx", Key: "e"}, {Namespace: "kv", Key: "b"}}
	out := make([]statedb.Result, len(keys))
	db.calls, db.keys = 0, 0
	if err := s.GetMany(keys, out); err != nil {
		t.Fatal(err)
	}
	if db.calls != 1 || db.keys != 3 {
		t.Errorf("GetMany of 6 keys, 3 in the overlay: %d database GetMany calls of %d keys; want 1 of 3", db.calls, db.keys)
	}
	for i, k := range keys {
		val, found, err := s.Get(k.Namespace, k.Key)
		if err != nil {
			t.Fatal(err)
		}
		if out[i].Found != found || string(out[i].Value.Data) != string(val.Data) || out[i].Value.Version != val.Version {
			t.Errorf("GetMany[%d] (%s/%s) = %q@%v found %v; Get = %q@%v found %v",
				i, k.Namespace, k.Key, out[i].Value.Data, out[i].Value.Version, out[i].Found, val.Data, val.Version, found)
		}
	}
	db.calls = 0
	if err := s.GetMany(keys[:1], out[:1]); err != nil || db.calls != 0 || string(out[0].Value.Data) != "new-d" {
		t.Errorf("GetMany of an overlay key: %q, %v, %d database calls; want new-d and none", out[0].Value.Data, err, db.calls)
	}
	if err := s.GetMany(keys, out[:2]); !errors.Is(err, statedb.ErrLengthsMismatch) {
		t.Errorf("GetMany of 6 keys into 2 results: %v, want ErrLengthsMismatch", err)
	}
}
