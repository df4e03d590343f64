// Package bbolt is a statedb backend on bbolt (go.etcd.io/bbolt), a
// copy-on-write B+tree in one memory-mapped file, in pure Go.
//
// It implements engine.Engine and leaves the statedb contract to package
// engine (shared layout, input checks, GetMany's sorted lookups in one
// read transaction, the Close protocol). State lives in one bucket of the
// file state.bolt in the directory.
//
// Invariants:
//   - A batch and its savepoint are written in ONE bbolt read-write
//     transaction: after a crash both or neither are visible.
//   - By default every commit is fsynced (bbolt's design: without the
//     fsyncs a power loss can leave a torn, unreadable file). With
//     Options.NoSync, commits are fsynced only when the caller asks.
//   - Reads run in one read-only transaction: one point in time.
//   - The directory carries Format (statedb.ClaimDir); Open refuses one
//     written by another backend or format version.
//
// Caller's duties, beyond statedb's: a Scan callback must not call Apply.
// A Scan holds a read transaction while it calls back, and a bbolt commit
// that grows the file waits for every read transaction to end.
//
// Limits: keys (namespace + key + 1) up to 32,768 bytes. bbolt has no
// block cache of its own; it reads through the OS page cache.
package bbolt
