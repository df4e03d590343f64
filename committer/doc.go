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
// blocks while stage 2 works on earlier ones.
//
// Stage 2 runs in block order. It sees committed state through a view: the
// state database plus an overlay holding the writes of blocks that stage 2
// has applied but stage 3 has not yet persisted. Sequential mode checks and
// applies transactions one by one; parallel mode schedules them along the
// block's dependency graph (read-after-write, write-after-read and
// write-after-write edges on the same key, and range reads against the keys
// written in their range), which yields the same codes and state.
//
// Stage 3 takes every block that is ready (up to Options.MaxGroup), appends
// them to the block store with one fsync, applies their state batches as one
// unsynced batch, prunes the overlay and then notifies subscribers.
//
// Invariants:
//   - The block store is the truth and is written before the state: the
//     state savepoint never passes the block store's height. A subscriber
//     hears of a block only once the block store has synced it, so nothing
//     acknowledged is lost; on New, blocks above the state savepoint are
//     re-applied from the block store using their stored validation codes.
//   - Validation is deterministic: it depends only on the chain, the channel
//     definition and the state, never on the clock, the mode or the number
//     of workers.
//   - A block that does not continue the hash chain, whose data hash does
//     not match, or whose orderer signature fails is refused whole; it and
//     every block received after it are dropped, and delivery must resume at
//     its number.
//
// The caller's duties: call Deliver from one goroutine at a time with blocks
// in order; own the block store and the state database (Close does not
// close them).
package committer
