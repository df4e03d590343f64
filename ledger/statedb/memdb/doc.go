// Package memdb is the in-memory statedb backend: a copy-on-write B-tree
// (github.com/google/btree) keyed by the shared key encoding
// (statedb.AppendKey), so its scan order is exactly that of the
// byte-ordered on-disk backends. It comes in two forms:
//
//   - New (backend "memory"): nothing touches the disk and nothing
//     survives Close. For tests, benchmarks and short-lived peers.
//   - Open (backend "memory-checkpoint", StreamChain's in-memory state):
//     the same tree, written whole to a checkpoint file in its directory
//     every Options.EveryBlocks blocks or Options.Interval, in the
//     background, and at Close. Open loads the newest checkpoint, so the
//     savepoint after a restart is that checkpoint's, and the committer
//     replays the blocks above it from the block store.
//
// Invariants:
//   - Readers never block. Each Apply builds the next version of the tree
//     on a private copy-on-write clone and publishes it, with its
//     savepoint, by one atomic pointer store; a reader works on the
//     version it loaded, so it sees all of a batch or none of it, and a
//     Scan sees one consistent version even while batches are applied.
//   - A published tree is never mutated: the writer only writes to its
//     own working tree, whose nodes are copied on write once a version
//     has been published from it. This is what makes a checkpoint cheap
//     and consistent: the checkpointer writes a published version while
//     Apply goes on, and both share every node not changed meanwhile.
//   - A batch is validated (namespaces, savepoint order) before any
//     write, so a rejected batch changes nothing.
//   - Values are copied on the way in and on the way out; callers own
//     what they pass and what they get.
//   - A checkpoint file is complete or absent: it is written to a
//     temporary file, fsynced, renamed, and the directory fsynced; it
//     carries a format version and a CRC-32C, and a file of another
//     backend or format version is refused naming both (statedb.ErrFormat).
//
// Durability of memory-checkpoint: Apply without sync keeps the batch in
// memory only, so a crash (of the process or the machine) loses every
// batch applied after the newest checkpoint. That loses nothing a client
// was told: the committer writes (and, in durable mode, fsyncs) the
// blocks to the block store before it applies their state, and on start
// it re-applies the blocks above the state's savepoint. What a crash
// costs is the time of that replay: at most EveryBlocks blocks or
// Interval of them. Apply with sync (pipeline.syncState) writes a
// checkpoint before it returns, which costs a write of the whole state
// per call: it keeps the statedb contract, but is rarely what one wants.
// A checkpoint that fails (disk full, directory gone) makes Apply refuse
// batches until one succeeds, as an on-disk backend whose writes fail.
//
// Memory: the whole state, plus, while a checkpoint is written, the tree
// nodes that Apply copies meanwhile; the checkpoint streams through a
// 1 MiB buffer. Disk: the newest two checkpoints.
//
// Caller's duties: Apply calls are serialised by the caller (memdb also
// serialises them itself); a Scan callback may call any method, including
// Apply and Close.
package memdb
