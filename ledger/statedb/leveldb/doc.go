// Package leveldb is a statedb backend on LevelDB, in its pure-Go port
// github.com/syndtr/goleveldb (no cgo).
//
// It implements engine.Engine and leaves the statedb contract to package
// engine: the shared layout (statedb.AppendKey, statedb.AppendValue, the
// savepoint under statedb.SavepointKey), input checks, GetMany's sorted
// lookups, and the Close protocol.
//
// Invariants:
//   - A batch and its savepoint go to LevelDB in one leveldb.Batch, which
//     LevelDB writes to its journal as one record: after a crash both or
//     neither are visible. Records reach the journal in order, so an
//     unsynced tail is lost only as a whole suffix of batches.
//   - With sync the write returns after the journal is fsynced.
//   - Reads run on a LevelDB snapshot: one point in time.
//   - The directory carries Format (statedb.ClaimDir); Open refuses one
//     written by another backend or format version.
package leveldb
