// Package endorser is step (2) of a transaction's flow: it checks a signed
// proposal, simulates the contract it names on committed state into a
// read/write set, and signs the result.
//
//	SignedProposal ─▶ admit (decode, channel, creator, expiry, tx id,
//	                  signature, replay, contract)
//	               ─▶ simulate (contract.Invoke on a stub over State)
//	               ─▶ ResponsePayload bytes, signed by this peer
//
// Simulate runs the same simulation without the admission checks that need
// a signature; the gateway's Evaluate (queries) uses it.
//
// Invariants:
//   - The read/write set is exactly what the validator re-checks
//     (committer/mvcc.go): the contract's own namespace and, for a
//     contract with a definition (SetDefinitions), last, the namespace
//     _lifecycle with one read of its definition record at the version of
//     the definition the call ran (lifecycle.Bind; ProcessProposal and
//     Simulate, not Evaluate), so that an endorsement made under an older
//     definition is MVCC_READ_CONFLICT once a newer one commits; a point read
//     records the committed version of a key, or no version when the key
//     was absent, once per key (the first read wins); reads of a key the
//     call has already written are served from its own writes and record
//     nothing; writes are the last write per key. Reads and writes are
//     sorted by key and range reads kept in call order, so that endorsers
//     that see the same state produce byte-identical ResponsePayloads, which
//     a transaction needs (all endorsers sign the same bytes).
//   - A range read records its effective start (the bookmark if given), its
//     end, and every committed key it visited with its version. When a page
//     limit stopped it, the key that the returned bookmark names was visited
//     too, so the validator's re-scan covers everything the contract could
//     observe: if that key is committed the read is recorded with Exhausted
//     false (the validator checks up to it); if it is one of the call's own
//     uncommitted writes the read is recorded as exhausted with EndKey set to
//     that key, an exact bound.
//   - A proposal is endorsed only if every check passed and the contract
//     returned normally within Config.Timeout; otherwise the response carries
//     a 4xx/5xx status and a message and no endorsement. ProcessProposal never
//     returns an error and never panics, whatever the input.
//   - Any state read error fails the simulation (500) even if the contract
//     swallows it: a read the set does not record could hide a conflict.
//   - Once a simulation is over (returned, panicked, timed out) its stub
//     refuses every call (ErrSimulationOver; the call of an abandoned
//     contract goroutine ends it), so a contract goroutine that outlives
//     its deadline cannot change a read/write set.
//
// A call that outlives its deadline is answered 504 and abandoned, and
// cannot hold a goroutine or the endorser forever (see run in run.go): its
// next stub call ends its goroutine (runtime.Goexit); one that never calls
// the stub again keeps its goroutine, Go cannot stop it, but while a
// contract has Config.MaxOverdue such calls its proposals are refused at
// once (503) and the other contracts are served. Metrics.Overdue counts
// them.
//
// Caller's duties: pass the SignedProposal as received (its proposal bytes
// are hashed and verified as they are); give the endorser a State that reads
// committed state and a Seen function backed by the block store's tx index
// (SeenIn adapts (*ledger.BlockStore).TxLocation). Contracts are called
// concurrently and must not share mutable state outside their stub.
package endorser
