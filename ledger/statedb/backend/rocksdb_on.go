//go:build rocksdb

package backend

import (
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/rocksdb"
)

func init() {
	openers["rocksdb"] = func(dir string, o *Options) (statedb.DB, error) { return rocksdb.Open(dir, o.RocksDB) }
}
