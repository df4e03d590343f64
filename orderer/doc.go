// Package orderer is strand's ordering service for one channel: it admits
// signed transactions, cuts them into blocks, hash-chains and signs the
// blocks, persists them, and delivers them to peers. This is the
// single-node orderer; Raft replication comes later and will slot in
// between the cutter and the store.
//
//	Submit (caller's goroutine, all cores): decode, channel, creator, signature
//	   │ bounded queue (Config.Queue; full → ErrOverloaded, never blocks)
//	   ▼
//	loop (one goroutine): owns the Cutter, arms a timer at Cutter.Deadline
//	   │ cut batches
//	   ▼
//	seal (one goroutine): number, previous hash, data hash, orderer signature, encode
//	   │ sealed blocks
//	   ▼
//	persist (one goroutine): Store.Append of every ready block, one fsync per group
//	   │ broadcast
//	   ▼
//	Deliver (any number): read the store from start, then wait for the next broadcast
//
// # The cutter: a pure decision core
//
// Cutter decides where blocks end and nothing else: no goroutine, no
// clock, no I/O. Time is an argument (Add and Tick take now); the cutter
// reports when it wants to be woken (Deadline) and returns the batches it
// cut, which the loop turns into work for the next stage. Block mode uses
// Fabric's three parameters (BatchConfig: MaxTxs, MaxBytes, Timeout); its
// behaviour is pinned by the script tests in testdata/cutter.txt.
//
// Streaming mode (a later issue) fits without changing this API:
// BatchConfig gains a Mode (Block, Stream); a new method
//
//	func (c *Cutter) Free(now time.Time) [][]byte
//
// tells the cutter the downstream pipeline has room and returns what is
// pending (bounded by MaxTxs/MaxBytes) at once, so a block holds one
// transaction under light load and many under heavy load. In stream mode
// Add still cuts at MaxTxs/MaxBytes, Deadline reports no deadline, and the
// loop calls Free when seal signals that it took the previous block (the
// cuts channel then has depth 1, so "free" means "seal is idle").
//
// # Invariants
//
//   - Ordering is the loop's alone: transactions are cut in the order the
//     loop took them from the queue, and the loop never hashes, signs,
//     waits for a fsync, or reads a clock inside the cutter's decisions.
//   - Blocks are numbered consecutively from Store.Height() at New and
//     each names the header hash (api.HeaderHash) of the one before; block
//     0 has no previous hash. The data hash is api.DataHash of the
//     transactions' exact bytes as submitted; the orderer signs the header
//     hash. This is exactly what committer.Deliver checks.
//   - The orderer fills in no validation decisions: its blocks carry
//     NOT_VALIDATED for every transaction, in the metadata and in the
//     store's index, and peers overwrite them.
//   - A block is visible (Height, Deliver) only after Store.Append has
//     returned, i.e. after its fsync: nothing delivered is lost in a crash.
//   - Durability: Submit returning nil means admitted, not durable. A
//     transaction is durable once its block is appended; a crash before
//     that loses it, and the client, which learns of commits from the
//     peers, resubmits. Close persists everything admitted before it.
//   - A storage failure is sticky: the orderer stops storing (ErrFailed
//     from Submit, Close returns it) and must be restarted; New resumes
//     from what the store holds.
//
// # Caller's duties
//
// Open the Store before New and close it after Close; the orderer must be
// its only appender. Do not modify bytes after handing them to Submit.
// Admission checks the creator only: endorsements, policies, MVCC and
// duplicate tx ids are checked by the peers.
package orderer
