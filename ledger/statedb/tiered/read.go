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
// cache, then the memory tier, then storage, all at one height, which it
// returns.
//
// The memory tier is searched under viewMu, with the cache, and a storage
// snapshot is taken (under the same lock, so at the same height; see
// view) only when some key is in neither: a read the memory tier answers
// whole, the usual one when the data fits it, costs Pebble nothing.
//
// shared hands fill the memory tier's own bytes of a value instead of a
// copy (entries never change; the caller must not modify them).
func (d *DB) lookup(s *statedb.KeySet, n int, shared bool, fill func(i int, v statedb.Value, found bool)) (uint64, error) {
	type hit struct {
		i  int
		e  entry
		in bool // in the memory tier; else read from snap
	}
	var hits []hit
	var snap *pebble.Snapshot
	d.viewMu.RLock()
	mem := d.mem.View()
	height := mem.Height() // the cache's too, under viewMu
	for _, i := range s.Order() {
		k := string(s.Key(i))
		if v, found, ok := d.cache.Get(k); ok {
			fill(i, v, found)
			d.cacheHits.Add(1)
			continue
		}
		if hits == nil {
			hits = make([]hit, 0, n)
		}
		e, in := mem.Get(k)
		hits = append(hits, hit{i: i, e: e, in: in})
		if !in && snap == nil {
			snap = d.storage.snapshot()
		}
	}
	d.viewMu.RUnlock()
	if snap != nil {
		defer snap.Close()
	}
	for _, h := range hits {
		var v statedb.Value
		var found bool
		if h.in {
			d.memoryHits.Add(1)
			if found = !h.e.deleted; found {
				if shared {
					v = statedb.Value{Data: h.e.data, Version: h.e.ver}
				} else {
					v = h.e.value() // entries never change: copied outside the lock
				}
			}
		} else {
			d.storageReads.Add(1)
			var err error
			if v, found, err = get(snap, s.Key(h.i)); err != nil {
				return 0, err
			}
		}
		if shared && d.cache != nil && h.in && found {
			// The cache's values are handed out to callers that may
			// modify them: it keeps a copy.
			d.cache.Put(height, string(s.Key(h.i)), h.e.value(), found)
		} else {
			d.cache.Put(height, string(s.Key(h.i)), v, found)
		}
		fill(h.i, v, found)
	}
	return height, nil
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
	_, err := d.GetManyAt(keys, out)
	return err
}

// GetManyAt is GetMany that also returns the height it read.
func (d *DB) GetManyAt(keys []statedb.Key, out []statedb.Result) (uint64, error) {
	return d.getManyAt(keys, out, false)
}

// GetManyShared is GetManyAt whose values the memory tier answers are
// its own bytes, not copies: the caller must not modify them. For a
// caller that only reads them once (the memory node's server, which
// marshals them into its answer), it saves a copy of every value.
func (d *DB) GetManyShared(keys []statedb.Key, out []statedb.Result) (uint64, error) {
	return d.getManyAt(keys, out, true)
}

func (d *DB) getManyAt(keys []statedb.Key, out []statedb.Result, shared bool) (uint64, error) {
	if err := d.gate.Enter(); err != nil {
		return 0, err
	}
	defer d.gate.Exit()
	var s statedb.KeySet
	if err := s.Load(keys, out); err != nil {
		return 0, err
	}
	return d.lookup(&s, len(out), shared, func(i int, v statedb.Value, found bool) {
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
	_, err := d.lookup(&s, len(out), true, func(i int, v statedb.Value, found bool) {
		out[i] = statedb.VersionResult{Version: v.Version, Found: found}
	})
	return err
}

// Scan implements statedb.DB. It reads one height, merging the memory
// tier's versions (tombstones included) over storage; it does not use or
// fill the cache. A callback may read and Apply, but must not Close.
func (d *DB) Scan(ns, start, end string, fn func(key string, v statedb.Value) bool) error {
	return d.ScanAt(ns, start, end, func(uint64) {}, fn)
}

// ScanAt is Scan that first tells at the height it reads: before the
// first key, even when the range is empty.
func (d *DB) ScanAt(ns, start, end string, at func(height uint64), fn func(key string, v statedb.Value) bool) error {
	if err := d.gate.Enter(); err != nil {
		return err
	}
	defer d.gate.Exit()
	if err := statedb.CheckNamespace(ns); err != nil {
		return err
	}
	vw := d.view()
	defer vw.close()
	at(vw.mem.Height())
	if statedb.EmptyRange(start, end) {
		return nil
	}
	lo, hi := statedb.AppendScanBounds(nil, ns, start, end)
	prefix := len(ns) + 1
	return d.merge(vw, lo, hi, func(k []byte, v statedb.Value) (bool, error) {
		return fn(string(k[prefix:]), v), nil
	})
}

// Dump implements statedb.Dumper, from one height.
func (d *DB) Dump(fn func(ns, key string, v statedb.Value) error) (uint64, error) {
	return d.DumpAt(func(uint64) {}, fn)
}

// DumpAt is Dump that first tells the height it reads, before the first
// key.
func (d *DB) DumpAt(at func(height uint64), fn func(ns, key string, v statedb.Value) error) (uint64, error) {
	if err := d.gate.Enter(); err != nil {
		return 0, err
	}
	defer d.gate.Exit()
	vw := d.view()
	defer vw.close()
	at(vw.mem.Height())
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
	d.viewMu.RLock()
	defer d.viewMu.RUnlock()
	return view{mem: d.mem.View(), snap: d.storage.snapshot()}
}

// merge calls fn for every key in [lo, hi) at vw's height, in ascending
// order: the memory tier's version where it has one (skipping
// tombstones), else storage's. fn returning false or an error stops it.
func (d *DB) merge(vw view, lo, hi []byte, fn func(k []byte, v statedb.Value) (bool, error)) error {
	it, err := vw.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("tiered: storage iterator: %w", err)
	}
	err = mergeIter(it, &memCursor{view: vw.mem, next: string(lo), hi: string(hi)}, fn)
	if cerr := it.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("tiered: storage iterator: %w", cerr)
	}
	return err
}

// memChunk is how many memory-tier versions a memCursor reads at once: a
// Scan that stops early reads little of a large tier.
const memChunk = 64

// memCursor walks a memory view's versions in [next, hi) a chunk at a
// time.
type memCursor struct {
	view     memView
	next, hi string  // the rest of the range
	buf      []entry // read but not yet consumed
}

// peek returns the next version, if any.
func (c *memCursor) peek() (entry, bool) {
	if len(c.buf) == 0 && c.next < c.hi {
		c.view.Ascend(c.next, c.hi, func(e entry) bool {
			c.buf = append(c.buf, e)
			return len(c.buf) < memChunk
		})
		c.next = c.hi
		if len(c.buf) == memChunk {
			c.next = c.buf[len(c.buf)-1].key + "\x00" // the least key after it
		}
	}
	if len(c.buf) == 0 {
		return entry{}, false
	}
	return c.buf[0], true
}

func (c *memCursor) pop() { c.buf = c.buf[1:] }

// mergeIter merges the storage iterator with the memory cursor, both
// sorted by key; memory shadows storage on equal keys. The iterator moves
// on only after fn has used its key.
func mergeIter(it *pebble.Iterator, mem *memCursor, fn func(k []byte, v statedb.Value) (bool, error)) error {
	valid := it.First()
	for {
		e, inMem := mem.peek()
		if !valid && !inMem {
			return it.Error()
		}
		c := 1 // memory's key comes first, or shadows storage's
		if valid && inMem {
			c = bytes.Compare(it.Key(), []byte(e.key))
		} else if valid {
			c = -1 // only storage has keys left
		}
		var k []byte
		var v statedb.Value
		skip := false
		if c < 0 {
			k = it.Key()
			raw, err := it.ValueAndErr()
			if err == nil {
				v, err = statedb.DecodeValue(raw)
			}
			if err != nil {
				return fmt.Errorf("tiered: storage value of key %q: %w", k, err)
			}
		} else {
			mem.pop()
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
}
