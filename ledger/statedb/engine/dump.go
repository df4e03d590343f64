package engine

import (
	"fmt"

	"github.com/strand-ledger/strand/ledger/statedb"
)

var _ statedb.Dumper = (*DB)(nil)

// Dump implements statedb.Dumper on one engine snapshot, which holds the
// savepoint record and the state it belongs to.
func (d *DB) Dump(fn func(ns, key string, v statedb.Value) error) (sp uint64, err error) {
	err = d.view(func(snap Snapshot) error {
		if _, err := snap.Get(statedb.SavepointKey, func(val []byte) (err error) {
			sp, err = statedb.DecodeSavepoint(val)
			return err
		}); err != nil {
			return fmt.Errorf("%s: dump: read savepoint: %w", d.name, err)
		}
		var fnErr error
		err := snap.Iterate(statedb.DumpLower, statedb.DumpUpper, func(k, raw []byte) bool {
			ns, key, err := statedb.SplitKey(k)
			if err != nil {
				fnErr = fmt.Errorf("%s: dump: %w", d.name, err)
				return false
			}
			v, err := statedb.DecodeValue(raw)
			if err != nil {
				fnErr = fmt.Errorf("%s: dump %q at key %q: %w", d.name, ns, key, err)
				return false
			}
			fnErr = fn(ns, key, v)
			return fnErr == nil
		})
		if err != nil {
			return fmt.Errorf("%s: dump: %w", d.name, err)
		}
		return fnErr
	})
	return sp, err
}
