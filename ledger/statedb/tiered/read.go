package tiered

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// view is one height of the state as a reader sees it: the memory tier's
// view and a storage snapshot taken together under DB.viewMu.
//
// Why the pair is one height h (the memory view's): the storage snapshot
// holds some savepoint s <= h, since the flusher writes only published
// heights; every key written above s has its newest version (as of h) in
// the memory view, since the memory tier drops a version only after
// storage holds it, and that Settle runs under viewMu, after the write;
// and a key missing from the memory view was last written at or below s,
// so the snapshot holds its state at h.
type view struct {
	mem  memView
	snap *pebble.Snapshot
}

func (v view) close() { _ = v.snap.Close() }

// lookup reads the keys s holds (validated, encoded) into fill, from the
// cache, then the memory tier, then storage, all at one height.
func (d *DB) lookup(s *statedb.KeySet, n int, fill func(i int, v statedb.Value, found bool)) error {
	missed := make([]int, 0, n)
	d.viewMu.Lock()
	for _, i := range s.Order() {
		if v, found, ok := d.cache.get(string(s.Key(i))); ok {
			fill(i, v, found)
			d.cacheHits.Add(1)
			continue
		}
		missed = append(missed, i)
	}
	if len(missed) == 0 {
		d.viewMu.Unlock()
		return nil
	}
	vw := view{mem: d.mem.View(), snap: d.storage.db.NewSnapshot()}
	d.viewMu.Unlock()
	defer vw.close()
	for _, i := range missed {
		k := s.Key(i)
		var v statedb.Value
		var found bool
		if e, ok := vw.mem.Get(string(k)); ok {
			d.memoryHits.Add(1)
			if found = !e.deleted; found {
				v = e.value()
			}
		} else {
			d.storageReads.Add(1)
			var err error
			if v, found, err = get(vw.snap, k); err != nil {
				return err
			}
		}
		d.cache.put(vw.mem.Height(), string(k), v, found)
		fill(i, v, found)
	}
	return nil
}

// Get implements statedb.DB.
func (d *DB) Get(ns, key string) (statedb.Value, bool, error) {
	var out [1]statedb.Result
	if err := d.GetMany([]statedb.Key{{Namespace: ns, Key: key}}, out[:]); err != nil {
		return statedb.Value{}, false, err
	}
	return out[0].Value, out[0].Found, nil
}

// GetMany implements statedb.DB. All lookups read one height.
func (d *DB) GetMany(keys []statedb.Key, out []statedb.Result) error {
	if err := d.gate.Enter(); err != nil {
		return err
	}
	defer d.gate.Exit()
	var s statedb.KeySet
	if err := s.Load(keys, out); err != nil {
		return err
	}
	return d.lookup(&s, len(out), func(i int, v statedb.Value, found bool) {
		out[i] = statedb.Result{Value: v, Found: found}
	})
}

// GetVersions implements statedb.VersionGetter. All lookups read one
// height.
func (d *DB) GetVersions(keys []statedb.Key, out []statedb.VersionResult) error {
	if err := d.gate.Enter(); err != nil {
		return err
	}
	defer d.gate.Exit()
	var s statedb.KeySet
	if err := s.LoadN(keys, len(out)); err != nil {
		return err
	}
	return d.lookup(&s, len(out), func(i int, v statedb.Value, found bool) {
		out[i] = statedb.VersionResult{Version: v.Version, Found: found}
	})
}

// Scan implements statedb.DB. It reads one height, merging the memory
// tier's versions (tombstones included) over storage; it does not use or
// fill the cache. A callback may read and Apply, but must not Close.
func (d *DB) Scan(ns, start, end string, fn func(key string, v statedb.Value) bool) error {
	if err := d.gate.Enter(); err != nil {
		return err
	}
	defer d.gate.Exit()
	if err := statedb.CheckNamespace(ns); err != nil {
		return err
	}
	if statedb.EmptyRange(start, end) {
		return nil
	}
	lo, hi := statedb.AppendScanBounds(nil, ns, start, end)
	vw := d.view()
	defer vw.close()
	prefix := len(ns) + 1
	return d.merge(vw, lo, hi, func(k []byte, v statedb.Value) (bool, error) {
		return fn(string(k[prefix:]), v), nil
	})
}

// Dump implements statedb.Dumper, from one height.
func (d *DB) Dump(fn func(ns, key string, v statedb.Value) error) (uint64, error) {
	if err := d.gate.Enter(); err != nil {
		return 0, err
	}
	defer d.gate.Exit()
	vw := d.view()
	defer vw.close()
	err := d.merge(vw, statedb.DumpLower, statedb.DumpUpper, func(k []byte, v statedb.Value) (bool, error) {
		ns, key, err := statedb.SplitKey(k)
		if err != nil {
			return false, fmt.Errorf("tiered: dump: %w", err)
		}
		if err := fn(ns, key, v); err != nil {
			return false, err
		}
		return true, nil
	})
	return vw.mem.Height(), err
}

func (d *DB) view() view {
	d.viewMu.Lock()
	defer d.viewMu.Unlock()
	return view{mem: d.mem.View(), snap: d.storage.db.NewSnapshot()}
}

// merge calls fn for every key in [lo, hi) at vw's height, in ascending
// order: the memory tier's version where it has one (skipping
// tombstones), else storage's. fn returning false or an error stops it.
func (d *DB) merge(vw view, lo, hi []byte, fn func(k []byte, v statedb.Value) (bool, error)) error {
	var mem []entry
	vw.mem.Ascend(string(lo), string(hi), func(e entry) bool {
		mem = append(mem, e)
		return true
	})
	it, err := vw.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("tiered: storage iterator: %w", err)
	}
	err = mergeIter(it, mem, fn)
	if cerr := it.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("tiered: storage iterator: %w", cerr)
	}
	return err
}

// mergeIter merges the storage iterator with mem, sorted by key; mem
// shadows storage on equal keys. The iterator moves on only after fn has
// used its key.
func mergeIter(it *pebble.Iterator, mem []entry, fn func(k []byte, v statedb.Value) (bool, error)) error {
	valid := it.First()
	for valid || len(mem) > 0 {
		c := compareNext(valid, it, mem)
		var k []byte
		var v statedb.Value
		skip := false
		if c < 0 { // storage's key comes first and is not in memory
			k = it.Key()
			raw, err := it.ValueAndErr()
			if err == nil {
				v, err = statedb.DecodeValue(raw)
			}
			if err != nil {
				return fmt.Errorf("tiered: storage value of key %q: %w", k, err)
			}
		} else { // memory's key comes first, or shadows storage's
			e := mem[0]
			mem = mem[1:]
			k, v, skip = []byte(e.key), e.value(), e.deleted
		}
		if !skip {
			if ok, err := fn(k, v); !ok || err != nil {
				return err
			}
		}
		if c <= 0 {
			valid = it.Next()
		}
	}
	return it.Error()
}

// compareNext compares the next storage key with the next memory key: -1
// when only storage has one or it is smaller, 0 when equal, 1 otherwise.
func compareNext(valid bool, it *pebble.Iterator, mem []entry) int {
	switch {
	case !valid:
		return 1
	case len(mem) == 0:
		return -1
	}
	return bytes.Compare(it.Key(), []byte(mem[0].key))
}
