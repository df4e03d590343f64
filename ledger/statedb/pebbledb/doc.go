// Package pebbledb is strand's default statedb backend, on Pebble
// (github.com/cockroachdb/pebble/v2).
//
// Layout: every state key is stored under statedb.AppendKey(ns, key) with
// the value statedb.AppendValue(v), so a namespace's keys are contiguous
// and sorted. The savepoint is stored as 8 big-endian bytes under
// statedb.SavepointKey ("\x00savepoint"), which no state key can equal:
// namespaces are non-empty and have no NUL byte, so no encoded state key
// starts with 0x00. Every read checks its namespace for the same reason.
//
// Invariants:
//   - Apply writes a batch's updates and the new savepoint in ONE
//     pebble.Batch, so after a crash both or neither are visible; batches
//     reach the WAL in order, so an unsynced tail is lost only as a whole
//     suffix of batches.
//   - A batch is validated (savepoint order, every namespace) before
//     anything is written; a rejected batch changes nothing.
//   - Readers see a batch all at once: Pebble publishes a committed batch
//     atomically, and a Scan or GetMany reads from one iterator, a single
//     point-in-time view.
//   - Close waits for running calls to return before it closes Pebble, and
//     every call made after Close starts returns statedb.ErrClosed, so no
//     call touches a closed Pebble.
//
// Caller's duties: Apply calls are serialised (one committer; pebbledb
// also serialises them itself). A Scan callback may read and Apply, but
// must not call Close, which would wait for the Scan forever.
package pebbledb
