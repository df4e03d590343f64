package pebbledb

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
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

// getManyScratch holds GetMany's encoded keys and lookup order.
type getManyScratch struct {
	buf   []byte // encoded keys, back to back
	ends  []int  // ends[i] is the end of key i in buf
	order []int  // indexes into keys, sorted by encoded key
	upper []byte // the iterator's upper bound: the greatest key || 0x00
}

var getManyPool = sync.Pool{New: func() any { return new(getManyScratch) }}

func (s *getManyScratch) key(i int) []byte {
	start := 0
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.buf[start:s.ends[i]]
}

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
	if len(keys) != len(out) {
		return fmt.Errorf("%w: %d keys, %d results", statedb.ErrLengthsMismatch, len(keys), len(out))
	}
	if len(keys) == 0 {
		return nil
	}
	s := getManyPool.Get().(*getManyScratch)
	defer getManyPool.Put(s)
	s.buf, s.ends, s.order = s.buf[:0], s.ends[:0], s.order[:0]
	for i, k := range keys {
		if i == 0 || k.Namespace != keys[i-1].Namespace {
			if err := statedb.CheckNamespace(k.Namespace); err != nil {
				return fmt.Errorf("key %d of GetMany: %w", i, err)
			}
		}
		s.buf = statedb.AppendKey(s.buf, k.Namespace, k.Key)
		s.ends = append(s.ends, len(s.buf))
		s.order = append(s.order, i)
	}
	slices.SortFunc(s.order, func(a, b int) int { return bytes.Compare(s.key(a), s.key(b)) })
	return d.getManyIter(keys, out, s)
}

// getManyIter looks up the keys in s.order with SeekGE on one iterator.
func (d *DB) getManyIter(keys []statedb.Key, out []statedb.Result, s *getManyScratch) error {
	s.upper = append(append(s.upper[:0], s.key(s.order[len(s.order)-1])...), 0)
	it, err := d.db.NewIter(&pebble.IterOptions{
		LowerBound: s.key(s.order[0]),
		UpperBound: s.upper,
	})
	if err != nil {
		return fmt.Errorf("pebbledb: GetMany iterator: %w", err)
	}
	for _, i := range s.order {
		out[i] = statedb.Result{}
		k := s.key(i)
		if !it.SeekGE(k) || !bytes.Equal(it.Key(), k) {
			continue
		}
		raw, err := it.ValueAndErr()
		if err == nil {
			out[i].Value, err = statedb.DecodeValue(raw)
		}
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("pebbledb: key %q in namespace %q: %w", keys[i].Key, keys[i].Namespace, err)
		}
		out[i].Found = true
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
	if end != "" && start >= end {
		return nil
	}
	// One buffer holds both bounds; Pebble reads them for the iterator's
	// lifetime.
	bounds := statedb.AppendKey(make([]byte, 0, 2*len(ns)+2+len(start)+len(end)), ns, start)
	lower := bounds[:len(bounds):len(bounds)]
	var upper []byte
	if end == "" {
		upper = append(append(bounds, ns...), 1) // the first key past the namespace
	} else {
		upper = statedb.AppendKey(bounds, ns, end)
	}
	upper = upper[len(lower):]
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
