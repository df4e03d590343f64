// Package statedb defines strand's versioned world state: the DB interface
// every backend implements, its value types, and the encodings backends
// share. Backends live in sub-packages (pebbledb, leveldb, badger, bbolt,
// rocksdb, memdb); every backend passes the exported conformance suite in
// package statedb/conformance. Optional capabilities are separate small
// interfaces that callers upgrade to by type assertion: VersionGetter
// (the versions of many keys in one ordered pass, for MVCC validation).
//
// Model: a key lives in a namespace (a contract name: 1-128 bytes, no NUL
// byte; see api.CheckNamespace). Each key has a value and the Version of the
// transaction that wrote it. The savepoint is the height of the state: the
// number of blocks whose updates have been applied (block numbers start at
// 0, so after applying block n the savepoint is n+1).
//
// Invariants every backend keeps:
//   - Apply is atomic: after a crash either all of a batch and its
//     savepoint are visible, or none of it.
//   - Apply with sync=true returns only once the batch is durable. With
//     sync=false it may be lost on a machine crash, but only together with
//     every later batch (batches become durable in order), so the state is
//     always the result of applying a prefix of the batches.
//   - Values returned to callers are owned by the caller.
package statedb
