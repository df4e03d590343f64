package engine

import (
	"fmt"
	"sync"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// view runs fn on a snapshot, inside the gate.
func (d *DB) view(fn func(snap Snapshot) error) error {
	if err := d.gate.Enter(); err != nil {
		return err
	}
	defer d.gate.Exit()
	snap, err := d.eng.Snapshot()
	if err != nil {
		return fmt.Errorf("%s: snapshot: %w", d.name, err)
	}
	defer snap.Release()
	return fn(snap)
}

// keyBufs recycles encoded-key buffers for Get.
var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

// Get implements statedb.DB.
func (d *DB) Get(ns, key string) (v statedb.Value, found bool, err error) {
	err = d.view(func(snap Snapshot) error {
		if err := statedb.CheckNamespace(ns); err != nil {
			return err
		}
		bp := keyBufs.Get().(*[]byte)
		defer keyBufs.Put(bp)
		*bp = statedb.AppendKey((*bp)[:0], ns, key)
		found, err = snap.Get(*bp, func(val []byte) (err error) {
			v, err = statedb.DecodeValue(val)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: get %q in namespace %q: %w", d.name, key, ns, err)
		}
		return nil
	})
	if err != nil || !found {
		return statedb.Value{}, false, err
	}
	return v, true, nil
}

var keySets = sync.Pool{New: func() any { return new(statedb.KeySet) }}

var _ statedb.VersionGetter = (*DB)(nil)

// GetMany implements statedb.DB. It looks the keys up in ascending
// encoded order on one snapshot: one view, and forward-moving lookups
// that reuse the engine's cached blocks or pages.
func (d *DB) GetMany(keys []statedb.Key, out []statedb.Result) error {
	for i := range out {
		out[i] = statedb.Result{}
	}
	return d.getEach(keys, len(out), func(i int, val []byte) (err error) {
		out[i].Value, err = statedb.DecodeValue(val)
		out[i].Found = err == nil
		return err
	})
}

// GetVersions implements statedb.VersionGetter as GetMany does, decoding
// only the versions: no value is copied.
func (d *DB) GetVersions(keys []statedb.Key, out []statedb.VersionResult) error {
	for i := range out {
		out[i] = statedb.VersionResult{}
	}
	return d.getEach(keys, len(out), func(i int, val []byte) (err error) {
		out[i].Version, err = statedb.DecodeVersion(val)
		out[i].Found = err == nil
		return err
	})
}

// getEach calls fn(i, value) for each key i that exists, in ascending
// encoded order on one snapshot; n is the number of results.
func (d *DB) getEach(keys []statedb.Key, n int, fn func(i int, val []byte) error) error {
	return d.view(func(snap Snapshot) error {
		if len(keys) == 0 && n == 0 {
			return nil
		}
		ks := keySets.Get().(*statedb.KeySet)
		defer keySets.Put(ks)
		if err := ks.LoadN(keys, n); err != nil {
			return err
		}
		for _, i := range ks.Order() {
			_, err := snap.Get(ks.Key(i), func(val []byte) error { return fn(i, val) })
			if err != nil {
				return fmt.Errorf("%s: key %q in namespace %q: %w", d.name, keys[i].Key, keys[i].Namespace, err)
			}
		}
		return nil
	})
}

// Scan implements statedb.DB, reading one snapshot.
func (d *DB) Scan(ns, start, end string, fn func(key string, v statedb.Value) bool) error {
	return d.view(func(snap Snapshot) error {
		if err := statedb.CheckNamespace(ns); err != nil {
			return err
		}
		if statedb.EmptyRange(start, end) {
			return nil
		}
		lower, upper := statedb.AppendScanBounds(make([]byte, 0, 2*len(ns)+2+len(start)+len(end)), ns, start, end)
		prefix := len(ns) + 1
		var decodeErr error
		err := snap.Iterate(lower, upper, func(k, val []byte) bool {
			v, err := statedb.DecodeValue(val)
			if err != nil {
				decodeErr = fmt.Errorf("%s: scan %q at key %q: %w", d.name, ns, k[prefix:], err)
				return false
			}
			return fn(string(k[prefix:]), v)
		})
		if err != nil {
			return fmt.Errorf("%s: scan %q: %w", d.name, ns, err)
		}
		return decodeErr
	})
}
