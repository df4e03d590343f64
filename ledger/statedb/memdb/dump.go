package memdb

import (
	"strings"

	"github.com/strand-ledger/strand/ledger/statedb"
)

var _ statedb.Dumper = (*DB)(nil)

// Dump implements statedb.Dumper on one published version.
func (d *DB) Dump(fn func(ns, key string, v statedb.Value) error) (uint64, error) {
	v, err := d.load()
	if err != nil {
		return 0, err
	}
	var fnErr error
	v.tree.Ascend(func(it item) bool {
		ns, key, _ := strings.Cut(it.key, "\x00")
		fnErr = fn(ns, key, it.value())
		return fnErr == nil
	})
	return v.savepoint, fnErr
}
