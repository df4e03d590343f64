// Package rocksdb is a statedb backend on RocksDB, through cgo and
// github.com/linxGnu/grocksdb v1.7.14, the release made for RocksDB
// 7.8.3, Debian 12's librocksdb-dev.
//
// The engine is compiled only with the build tag rocksdb:
//
//	apt-get install -y librocksdb-dev
//	go test -tags rocksdb ./ledger/statedb/...
//	go build -tags rocksdb ./cmd/strand
//
// Without the tag this package holds only Options, so that configuration
// can name rocksdb's options in every binary, and package backend refuses
// the backend with a message saying how to build it.
//
// It implements engine.Engine and leaves the statedb contract to package
// engine (shared layout, input checks, GetMany's sorted lookups on one
// snapshot, the Close protocol).
//
// Invariants:
//   - A batch and its savepoint go to RocksDB in ONE WriteBatch: after a
//     crash both or neither are visible; batches reach the WAL in order.
//   - With sync the write returns after the WAL is fsynced.
//   - Reads run on a RocksDB snapshot: one point in time.
//   - The directory carries Format (statedb.ClaimDir); Open refuses one
//     written by another backend or format version.
package rocksdb
