package pebbledb

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// keyBufs recycles encoded-key buffers for Get.
var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

// Get implements statedb.DB.
func (d *DB) Get(ns, key string) (statedb.Value, bool, error) {
	if err := d.enter(); err != nil {
		return statedb.Value{}, false, err
	}
	defer d.exit()
	if err := statedb.CheckNamespace(ns); err != nil {
		return statedb.Value{}, false, err
	}
	bp := keyBufs.Get().(*[]byte)
	k := statedb.AppendKey((*bp)[:0], ns, key)
	val, closer, err := d.db.Get(k)
	*bp = k
	keyBufs.Put(bp)
	if errors.Is(err, pebble.ErrNotFound) {
		return statedb.Value{}, false, nil
	}
	if err != nil {
		return statedb.Value{}, false, fmt.Errorf("pebbledb: get %q in namespace %q: %w", key, ns, err)
	}
	defer closer.Close()
	v, err := statedb.DecodeValue(val)
	if err != nil {
		return statedb.Value{}, false, fmt.Errorf("pebbledb: key %q in namespace %q: %w", key, ns, err)
	}
	return v, true, nil
}

// getManyScratch holds GetMany's sorted keys and iterator bound.
type getManyScratch struct {
	keys  statedb.KeySet
	upper []byte // the iterator's upper bound: the greatest key || 0x00
}

var getManyPool = sync.Pool{New: func() any { return new(getManyScratch) }}

var _ statedb.VersionGetter = (*DB)(nil)

// GetMany implements statedb.DB. It looks keys up in ascending encoded
// order through one iterator, so the lookups share block reads and see
// one point-in-time view. (Measured against one Get per key, sorted: 8
// random keys of 200,000 took 35 µs vs 38 µs from memtables and 48 µs vs
// 112 µs from sstables.)
func (d *DB) GetMany(keys []statedb.Key, out []statedb.Result) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	if len(keys) == 0 && len(out) == 0 {
		return nil
	}
	s := getManyPool.Get().(*getManyScratch)
	defer getManyPool.Put(s)
	if err := s.keys.Load(keys, out); err != nil {
		return err
	}
	return d.getManyIter(keys, out, s)
}

// getManyIter looks up the keys of s in ascending order with SeekGE on
// one iterator.
func (d *DB) getManyIter(keys []statedb.Key, out []statedb.Result, s *getManyScratch) error {
	for i := range out {
		out[i] = statedb.Result{}
	}
	return d.seekEach(keys, s, func(i int, raw []byte) (err error) {
		out[i].Value, err = statedb.DecodeValue(raw)
		out[i].Found = err == nil
		return err
	})
}

// GetVersions implements statedb.VersionGetter as GetMany does, decoding
// only the versions: no value is copied.
func (d *DB) GetVersions(keys []statedb.Key, out []statedb.VersionResult) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	if len(keys) == 0 && len(out) == 0 {
		return nil
	}
	s := getManyPool.Get().(*getManyScratch)
	defer getManyPool.Put(s)
	if err := s.keys.LoadN(keys, len(out)); err != nil {
		return err
	}
	for i := range out {
		out[i] = statedb.VersionResult{}
	}
	return d.seekEach(keys, s, func(i int, raw []byte) (err error) {
		out[i].Version, err = statedb.DecodeVersion(raw)
		out[i].Found = err == nil
		return err
	})
}

// seekEach calls fn(i, value) for each key i of s that exists, in
// ascending order, from one iterator (SeekGE moves forward, reusing the
// blocks it has loaded). s holds at least one key.
func (d *DB) seekEach(keys []statedb.Key, s *getManyScratch, fn func(i int, raw []byte) error) error {
	order := s.keys.Order()
	s.upper = append(append(s.upper[:0], s.keys.Key(order[len(order)-1])...), 0)
	it, err := d.db.NewIter(&pebble.IterOptions{
		LowerBound: s.keys.Key(order[0]),
		UpperBound: s.upper,
	})
	if err != nil {
		return fmt.Errorf("pebbledb: GetMany iterator: %w", err)
	}
	for _, i := range order {
		k := s.keys.Key(i)
		if !it.SeekGE(k) || !bytes.Equal(it.Key(), k) {
			continue
		}
		raw, err := it.ValueAndErr()
		if err == nil {
			err = fn(i, raw)
		}
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("pebbledb: key %q in namespace %q: %w", keys[i].Key, keys[i].Namespace, err)
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("pebbledb: GetMany: %w", err)
	}
	return nil
}

// Scan implements statedb.DB, reading one point-in-time view.
func (d *DB) Scan(ns, start, end string, fn func(key string, v statedb.Value) bool) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	if err := statedb.CheckNamespace(ns); err != nil {
		return err
	}
	if statedb.EmptyRange(start, end) {
		return nil
	}
	// Pebble reads the bounds for the iterator's lifetime.
	lower, upper := statedb.AppendScanBounds(make([]byte, 0, 2*len(ns)+2+len(start)+len(end)), ns, start, end)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("pebbledb: scan %q: %w", ns, err)
	}
	prefix := len(ns) + 1
	for ok := it.First(); ok; ok = it.Next() {
		raw, err := it.ValueAndErr()
		var v statedb.Value
		if err == nil {
			v, err = statedb.DecodeValue(raw)
		}
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("pebbledb: scan %q at key %q: %w", ns, it.Key()[prefix:], err)
		}
		if !fn(string(it.Key()[prefix:]), v) {
			break
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("pebbledb: scan %q: %w", ns, err)
	}
	return nil
}
