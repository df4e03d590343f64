// Package committer is the validating peer's pipeline: it takes ordered
// blocks, decides a validation code for every transaction, and commits the
// blocks to the block store and their valid writes to the state database.
//
//	Deliver ─▶ [1] decode + verify (all cores, any order)
//	        ─▶ [2] duplicate tx ids, MVCC, apply (block order)
//	        ─▶ [3] block store append + state batch, group-committed ─▶ notify
//
// Stage 1 needs no state: it decodes each transaction once (api.DecodeTx),
// checks the creator's certificate and signature, every endorsement that can
// count towards the contract's policy, and the policy itself; per block it
// checks the data hash and the orderer's signature. It runs ahead on later
// blocks while stage 2 works on earlier ones. On a channel with Ed25519
// members each worker takes a share of a block (Options.VerifyBatch) and
// checks its Ed25519 signatures as one identity.Batch, checking the share
// again one by one only if the batch fails (verifyTxs says why the codes
// are exactly those of one-by-one checks). A channel config update (the
// only transaction of a config block, api.IsConfigEnvelope) is checked for
// its form, channel and the signatures of admins of a majority of orgs
// (identity.Registry.AdminMajority) instead; it is VALID under its
// envelope's id and reads and writes no state.
//
// Stage 2 runs in block order. It sees committed state through a view: the
// state database plus an overlay holding the writes of blocks that stage 2
// has applied but stage 3 has not yet persisted. Before a block's checks,
// stage 2 reads the versions of every key the block reads that the
// overlay lacks in one batched call, where the backend offers one
// (statedb.VersionGetter: one ordered pass, no value copies; see
// blockReads for why a concurrent prune cannot make it stale). Sequential
// mode checks and applies transactions one by one; parallel mode schedules them along the
// block's dependency graph (read-after-write, write-after-read and
// write-after-write edges on the same key, and range reads against the keys
// written in their range), which yields the same codes and state.
//
// Stage 3 takes every block that is ready (up to Options.MaxGroup), appends
// them to the block store with one fsync, applies their state batches as one
// unsynced batch, prunes the overlay and then notifies subscribers.
//
// # Durability
//
// Options.Durability says when subscribers (the gateway, and through it
// the client) hear that a block committed:
//
//   - Durable (the default): after the block store's fsync. A crash of the
//     process or of the machine loses nothing a client was told.
//   - Relaxed: once the block is written (not synced) and applied; the
//     block store is fsynced every Options.FlushInterval (20 ms by
//     default) and at Close. This takes the peer's fsync off every commit's
//     path. A process crash loses nothing (the kernel holds the writes). A
//     machine crash can lose the last FlushInterval of blocks from this
//     peer's disk — not from the channel: the ordering service holds them
//     durably, and on restart the peer fetches them again and validates
//     them to the same codes (validation is deterministic), so what its
//     clients were told still holds. If the state database kept more than
//     the block store, its savepoint is ahead; the node then rebuilds the
//     state from the block store (node.StartPeer) before catching up.
//
// Invariants:
//   - The block store is the truth and is written before the state: the
//     state savepoint never passes the block store's height (in Relaxed,
//     only a machine crash can break this; see Durability). In Durable, a
//     subscriber hears of a block only once the block store has synced it,
//     so nothing acknowledged is lost; on New, blocks above the state
//     savepoint are re-applied from the block store using their stored
//     validation codes. A block the store finds damaged (ledger.Damage)
//     is restored before New by Repair, from the ordering service's copy,
//     with its codes decided again against the state replayed from below
//     it (Repair explains why the state must be replayed).
//   - Validation is deterministic: it depends only on the chain, the channel
//     definition and the state, never on the clock, the mode or the number
//     of workers.
//   - A block that does not continue the hash chain, whose data hash does
//     not match, or whose orderer signature fails (or is missing, unless
//     the channel signs only checkpoints: Channel.Checkpoints) is refused
//     whole; it and
//     every block received after it are dropped, and delivery must resume at
//     its number.
//
// The caller's duties: call Deliver from one goroutine at a time with blocks
// in order; own the block store and the state database (Close does not
// close them).
package committer
