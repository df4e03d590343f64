// Package engine implements statedb.DB once, on top of any ordered,
// byte-keyed storage engine, so that the leveldb, badger, bbolt and
// rocksdb backends share one implementation of the statedb contract and
// differ only in the few lines that talk to their engine.
//
// A backend implements Engine (atomic batch writes, point-in-time
// snapshots, Close) and hands it to New. The adapter owns the layout
// (statedb.AppendKey, statedb.AppendValue, statedb.SavepointKey), input
// checks, the savepoint order, GetMany's sorted lookups and the Close
// protocol.
//
// Invariants:
//   - Apply validates a batch (savepoint order, every namespace) before
//     the engine sees it, and hands the engine the batch's updates and the
//     new savepoint as ONE Batch, which the engine writes atomically; so
//     after a crash both or neither are visible.
//   - Every read (Get, GetMany, Scan) runs on one Snapshot, so it sees
//     whole batches and one point in time.
//   - Close waits for running calls to return (statedb.Gate) before it
//     closes the engine; calls made after Close starts get
//     statedb.ErrClosed. So the engine never sees a call after Close, and
//     every Snapshot is released before Close.
//
// Engine implementers' duties: Write is atomic and, with sync, durable on
// return; batches become durable in the order written. Snapshot is safe
// for concurrent use with Write and other snapshots. Values passed to
// callbacks may be reused after the callback returns; the adapter copies.
package engine
