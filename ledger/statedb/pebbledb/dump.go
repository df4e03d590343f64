package pebbledb

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/strand-ledger/strand/ledger/statedb"
)

var _ statedb.Dumper = (*DB)(nil)

// Dump implements statedb.Dumper on one Pebble snapshot, which holds the
// savepoint record and the state it belongs to.
func (d *DB) Dump(fn func(ns, key string, v statedb.Value) error) (uint64, error) {
	if err := d.enter(); err != nil {
		return 0, err
	}
	defer d.exit()
	snap := d.db.NewSnapshot()
	defer snap.Close()
	var sp uint64
	val, closer, err := snap.Get(statedb.SavepointKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return 0, fmt.Errorf("pebbledb: dump: read savepoint: %w", err)
	default:
		sp, err = statedb.DecodeSavepoint(val)
		closer.Close()
		if err != nil {
			return 0, fmt.Errorf("pebbledb: dump: %w", err)
		}
	}
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: statedb.DumpLower, UpperBound: statedb.DumpUpper})
	if err != nil {
		return 0, fmt.Errorf("pebbledb: dump: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		err = dumpOne(it.Key(), it.Value(), fn)
		if err != nil {
			break
		}
	}
	if cerr := it.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("pebbledb: dump: %w", cerr)
	}
	return sp, err
}

func dumpOne(k, raw []byte, fn func(ns, key string, v statedb.Value) error) error {
	ns, key, err := statedb.SplitKey(k)
	if err != nil {
		return fmt.Errorf("pebbledb: dump: %w", err)
	}
	v, err := statedb.DecodeValue(raw)
	if err != nil {
		return fmt.Errorf("pebbledb: dump %q at key %q: %w", ns, key, err)
	}
	return fn(ns, key, v)
}
