// Package orderer is strand's ordering service for one channel: it admits
// signed transactions, cuts them into blocks, hash-chains and signs the
// blocks, persists them, and delivers them to peers. This is the
// single-node orderer; Raft replication comes later and will slot in
// between the cutter and the store.
//
//	Submit (caller's goroutine, all cores): decode, channel, creator, signature
//	   │ bounded queue (Config.Queue; full → ErrOverloaded, never blocks)
//	   ▼
//	loop (one goroutine): owns the Cutter; block mode: arms a timer at Cutter.Deadline;
//	   │                  stream mode: calls Cutter.Free when nothing is in flight
//	   │ cut batches                                ▲
//	   ▼                                            │ idle (stream mode, from persist)
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
// clock, no I/O. Time is an argument (Add, Tick and Free take now); the
// cutter reports when it wants to be woken (Deadline) and returns the
// batches it cut, which the loop turns into work for the next stage.
// BatchConfig.Mode picks one of two policies, both pinned by the script
// tests in testdata/cutter.txt:
//
//   - ModeBlock (the default) uses Fabric's three parameters (MaxTxs,
//     MaxBytes, Timeout): a block is cut when full or Timeout after its
//     first transaction. Free cuts nothing.
//   - ModeStream (StreamChain's idea) cuts the pending transactions as soon
//     as the next stage can take them: Free(now) returns them, so a block
//     holds one transaction under light load and, under heavy load,
//     everything that arrived while seal was busy. Add still cuts at
//     MaxTxs/MaxBytes; there is no timer (Deadline reports none, Tick cuts
//     nothing).
//
// # Stream mode: who calls Free, and when
//
// "Free" means nothing is in flight: every batch the loop sent downstream
// is a durable block (appended and fsynced by persist), as in StreamChain,
// where a new block is cut when the pipeline can take it. The loop counts
// the batches it sends (Orderer.inSeal); persist counts them down after
// each group's fsync (seal does, for a batch it could not seal), and at
// zero wakes the loop on a channel of capacity 1 (a non-blocking send, so
// persist never waits on the loop and a wake-up is never lost). After
// every event (a transaction, a wake-up) the loop checks the count and, at
// zero, calls Free and sends what it returns. So at low load each
// transaction is cut at once, with no timer; under load the next batch
// grows inside the cutter while the previous block is signed and fsynced,
// which is what keeps throughput. Batches that Add cuts because they are
// full (MaxTxs/MaxBytes) are sent at once even while others are in
// flight, as in block mode.
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
