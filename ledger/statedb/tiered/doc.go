// Package tiered is the tiered statedb backend of FlexChain's
// disaggregated peer (§4.1): a local cache, a memory tier and a storage
// tier, read in that order.
//
//		Get ─▶ cache (LRU, bytes)  ─miss─▶ memory tier (bytes)  ─miss─▶ storage (Pebble)
//		Apply ─▶ memory tier + cache     flusher ─▶ storage (versions + savepoint), then evict
//
//	  - The local cache holds the values (and absences) of recently read
//	    and written keys, at most Options.CacheBytes, least recently used
//	    evicted first. It always describes the published height: Apply
//	    updates the keys it writes, and a read that raced with an Apply
//	    does not insert what the Apply overwrote.
//	  - The memory tier holds the newest version of every key written
//	    above the storage tier's savepoint, and as many older, durable
//	    versions as fit in Options.MemoryBytes. Behind a small interface
//	    (memoryTier) so that a memory node reached over the network can
//	    take its place; the in-process tier is a copy-on-write B-tree.
//	  - The storage tier is Pebble in pebbledb's layout, with its own
//	    savepoint, written only by the background flusher.
//
// Durability, the rule that makes the memory tier losable: Apply writes
// only to memory (never to storage, and it never evicts). The flusher
// writes every batch above the storage savepoint, in order, together with
// the published height as the new savepoint, in one atomic Pebble batch,
// so the storage savepoint is always a height whose state storage fully
// holds. Only then does it let the memory tier drop versions, and only
// versions written at or below that savepoint. Losing the memory tier
// (a crash, or a memory node restarting) therefore loses only blocks above
// the storage savepoint, which the block store holds: Savepoint reports
// the storage tier's height again, reads fall through to storage, and the
// committer re-applies the blocks above it (FlexChain §4.1.2; strand's
// recovery rule, the block store is the truth).
//
// Invariants:
//   - A read sees one height. Get, GetMany and GetVersions take their
//     cache lookups, memory view and storage snapshot under one lock that
//     Apply's publish and the flusher's eviction also take; Scan and Dump
//     merge a memory view over a storage snapshot taken together. Why
//     that pair is one height is written above type view (read.go).
//   - Apply with sync returns once storage holds the batch durably (a
//     synced flush); without sync, batches reach storage in order, so a
//     crash leaves the state of a prefix of them, as the statedb contract
//     asks.
//   - The memory tier stays within MemoryBytes: Apply waits for room
//     (the flusher flushes, then evicts the coldest durable versions),
//     except that a batch larger than the whole tier is admitted alone
//     into an empty one. Eviction is decided by pure functions
//     (policy.go), with sizes and time as arguments. Not counted: the
//     values of versions overwritten before their batch was flushed,
//     which the pending batches keep until the next flush (at most
//     FlushBlocks blocks or FlushInterval of writes).
//   - A batch is validated (savepoint order, namespaces) before any write;
//     a flusher failure makes Apply refuse batches, naming the failure.
//   - Values are copied in and out; callers own what they pass and get.
//
// Caller's duties: Apply calls are serialised (one committer; the DB also
// serialises them). A Scan callback may read and Apply, but must not call
// Close, which waits for the Scan.
package tiered
