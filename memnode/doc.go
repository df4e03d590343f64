// Package memnode is the memory node of FlexChain's disaggregated peer
// (§4.1): the memory tier as a service, over gRPC with mutual TLS.
//
//	peer: committer / endorsers ─▶ Client (statedb.DB: local cache) ══gRPC══▶ Server
//	                                                   memory tier (bytes) ─flush, evict─▶ storage tier (Pebble)
//
// The Server serves a tiered.DB opened without its cache (its callers keep
// their own): versioned GetMany, a client-paced streamed Scan (one height
// per scan, pages of 16 doubling to 512 keys), Apply of a batch with the
// height it brings the state from and to, and Savepoint. Eviction and
// flushing are tiered's: a background flusher writes blocks through to
// storage with their height as the storage savepoint, then evicts cold
// durable versions within the byte limit.
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
//   - Unreachable: every call fails with statedb.ErrUnavailable naming the
//     node's address; nothing is retried inside the client (the
//     committer waits and retries; an endorsement fails and says why).
//   - The client's cache is written through by its own Apply, so with one
//     writer it is never stale. Compute nodes that do not write (the next
//     step) will need change notifications; MVCC at validation re-checks
//     every read, so a stale cache costs conflicts, never correctness.
//
// The caller's duties: Apply is serialised (one committer); a Scan
// callback must not Close.
package memnode
