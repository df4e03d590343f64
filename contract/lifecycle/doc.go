// Package lifecycle owns contract definitions: what a channel agrees a
// contract is (name, version, sequence, runtime, code hash, endorsement
// policy, optional init function), how a definition travels, and the
// rules that decide whether one may follow another.
//
// A definition is agreed by an ordinary transaction of the reserved
// contract Namespace ("_lifecycle"). Its "endorsements" are signatures of
// org admins over the response payload, and the channel's lifecycle
// policy (Fabric's MAJORITY Endorsement by default: DefaultPolicy) is
// that contract's endorsement policy, so the committer checks them with
// the code that checks every endorsement, in stage 1, off the ordered
// path. The transaction writes exactly:
//
//	def/<name>   the definition's exact bytes (Encode), which admins sign
//	             as part of the response payload
//	code/<hash>  the WebAssembly module, for runtime wasm only; its SHA-256
//	             is the definition's code hash
//
// Code travels in the definition transaction (see docs/contracts.md for
// why): every peer, including one that joins or restores later, gets the
// module from the chain and keeps it in its state, so a committed
// definition is never waiting for an install step on some peer.
//
// Invariants:
//   - CheckWrites (stateless, stage 1) and Table.Next (block order, stage 2)
//     are the whole decision; both depend only on the chain, so every peer
//     reaches the same validation code from the block alone.
//   - Sequences start at 1 and rise by exactly one: a definition whose
//     sequence is not the current one plus one is refused
//     (ErrSequence), so a replay or a downgrade never applies.
//   - A definition committed in block N governs transactions of blocks
//     after N (the endorsement policy in force at a transaction's block,
//     as Fabric's "policy at validation"). Transactions in block N itself
//     are validated under the definitions before it.
//   - An upgrade keeps the contract's namespace and therefore its state.
//   - An endorsement is bound to the definition it ran: an endorsed call
//     reads DefKey(name) at that definition's version (Bind), so once a
//     later definition commits, MVCC invalidates it
//     (MVCC_READ_CONFLICT), as Fabric's chaincode definition read does.
//
// Tables are immutable: Next returns a new one.
package lifecycle
