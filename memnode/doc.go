// Package memnode is the memory node of FlexChain's disaggregated peer
// (§4.1): the memory tier as a service, over gRPC with mutual TLS.
//
//	peer: committer ─▶ Client (writer: local cache) ══gRPC══▶ Server
//	compute nodes ─▶ Client (Follow: cache) ◀══Watch══╝      memory tier (bytes) ─flush, evict─▶ storage tier (Pebble)
//
// The Server serves a tiered.DB opened without its cache (its callers
// keep their own): versioned GetMany (and the same on a client's read
// stream), a client-paced streamed Scan (one
// height per scan, pages of 16 doubling to 512 keys), Apply of a batch
// with the height it brings the state from and to, Savepoint, and
// Watch, the change feed of readers' caches. Eviction and flushing are
// tiered's: a background flusher writes blocks through to storage with
// their height as the storage savepoint, then evicts cold durable
// versions within the byte limit.
//
// Invariants:
//   - One writer per node (the peer's committer). Apply applies a batch
//     whose from is the published height, acknowledges one it already
//     holds (height at or below the published one, from below it: the
//     answer was lost and the batch re-sent) and refuses any other,
//     naming the published height.
//   - A restart (or SIGKILL) starts at the storage savepoint: the blocks
//     above it are lost, and the peer re-applies them from its block
//     store, the truth (committer's restore).
//   - The fence (Client): every read answers with the height it read at;
//     the client refuses an answer below the height it had acknowledged
//     before it asked (statedb.ErrStateLost), and Apply sends that height
//     as from, so a node that lost state never passes its old state off
//     as current. After a loss, Client.Savepoint reports the node's
//     height and the client starts over there.
//   - A client's multi-gets travel on one long-lived read stream
//     (Reads, reads.go), multiplexed by id, which the node serves in
//     order in the stream's goroutine; a stream that breaks fails every
//     read on it (ErrUnavailable) and the next read opens another. Close
//     asks the clients to half-close their streams.
//   - A client has at most two multi-gets of a kind (values, versions
//     only) in flight; reads that miss its cache meanwhile wait and go
//     together in the next call (batch.go), whose failure each of them
//     returns. The fence's floor is read when that call is sent, after
//     every read in it began.
//   - Unreachable: every call fails with statedb.ErrUnavailable naming the
//     node's address; nothing is retried inside the client (the
//     committer waits and retries; an endorsement fails and says why).
//   - The writer's cache is written through by its own Apply, so with
//     one writer it is never stale. A remote answer is cached when it
//     is the key's state at the cache's height: read at that height,
//     or below it with no batch since writing the key (tiered.Cache's
//     log), or at the height of the writer's Apply in flight, of a key
//     that batch does not write; a versions-only answer is cached
//     without its value (it answers the next MVCC check, not a Get).
//   - Readers (ClientOptions.Follow: compute nodes that simulate and
//     endorse while only the peer's committer writes) follow the change
//     feed, Watch: a resync at the node's height, then per applied batch
//     its height and the keys it wrote. A reader's cache describes the
//     feed's height (each change invalidates its keys), so an answer is
//     never older than the feed when the read began; it is dropped on a
//     resync, a lost stream, or a node found below the highest height it
//     showed the reader, whose reads then fail with ErrStateLost until
//     the primary has re-applied (the rules: type follower). MVCC at
//     validation re-checks every read, so a stale cache costs conflicts,
//     never correctness; FeedMetrics says how stale it runs.
//   - The feed never holds up Apply: each subscriber's queue on the
//     node is bounded in bytes (WatchBufferBytes), and one that would
//     overflow becomes a resync at the newest height (type backlog).
//   - Each client (a certificate's common name) holds at most
//     Limits.MaxCallsPerClient running reads and MaxWatchesPerClient
//     feeds; beyond, calls are refused at once with ResourceExhausted
//     naming the limit. Messages are bounded by MaxMessageBytes.
//
// The caller's duties: Apply is serialised (one committer); a Scan
// callback must not Close.
package memnode
