// Package badger is a statedb backend on BadgerDB v4
// (github.com/dgraph-io/badger/v4), an LSM tree with key-value separation,
// in pure Go.
//
// It implements engine.Engine and leaves the statedb contract to package
// engine (shared layout, input checks, GetMany's sorted lookups on one
// read transaction, the Close protocol).
//
// Invariants:
//   - A batch and its savepoint are written in ONE Badger transaction, so
//     after a crash both or neither are visible. A transaction holds at
//     most 15% of a memtable (Badger's limit); a larger batch is refused
//     whole with ErrBatchTooBig (statedb.ErrBatchTooBig), never split here:
//     the committer splits it at block boundaries, each part with its
//     savepoint.
//   - With sync, Write returns after Badger has synced its write-ahead log
//     (DB.Sync), unless SyncWrites already syncs every write.
//   - Reads run in one read-only transaction: one point in time.
//   - The directory carries Format (statedb.ClaimDir); Open refuses one
//     written by another backend or format version.
//
// Memory: Badger's defaults are sized for a dedicated server (five 64 MiB
// memtables, a 256 MiB block cache, every table index in memory: well
// over 600 MiB). A peer shares its machine with the validator, so the
// defaults here are small and bounded (Options, and the fixed choices in
// badgerOptions), each for a measured reason:
//
//   - MemTableSize 16 MiB, NumMemtables 2. Each memtable is an arena
//     Badger allocates whole (MemTableSize plus 30% for its batch
//     limits) on the Go heap, replaced at every flush, plus a write-ahead
//     log mapped at twice its size. The Go heap's growth multiplies the
//     arenas, so a Badger node runs with gc.percent 100, not strand's 300
//     (package gctune). At 32 MiB a peer's process
//     held 1.7x LevelDB's RSS in the fixed-asset study (1 KB assets),
//     at 16 MiB with the value threshold below 1.1-1.2x (docs/statedb.md).
//   - ValueThreshold 4 KiB: larger values go to the value log (Badger's
//     key-value separation) and the tree keeps a pointer. They then no
//     longer fill memtables, and count as pointers towards the batch
//     limit, so large-value blocks fit one transaction. With 64 KB assets
//     the process RSS fell from 2.4 GiB to 0.75 GiB.
//   - ValueLogFileSize 64 MiB (Badger: 1 GiB): value log files are
//     mapped at twice their size, and GC rewrites one file at a time.
//   - CacheSize 128 MiB (half Badger's own) and IndexCacheSize 16 MiB:
//     the cache as Pebble's; without an index cache Badger keeps every
//     table's index and bloom filter in memory, growing with the state.
//   - Badger maps its table and value log files, so the pages it reads
//     or writes count in the process's RSS (other LSM backends read
//     through the page cache, which RSS does not count); the kernel
//     drops them under memory pressure.
//
// The value log is garbage-collected every 5 minutes (RunValueLogGC at a
// discard ratio of 0.5), so overwritten large values are reclaimed.
//
// Limits: keys up to 65,000 bytes.
package badger
