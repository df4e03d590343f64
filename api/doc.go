// Package api holds strand's wire messages (strand.proto, generated code
// committed) and the few functions every node must compute identically:
// block header and data hashes, transaction ids, and the decode-once
// transaction type Tx.
//
// Invariants:
//   - Signatures cover exact bytes: a Transaction's payload bytes (creator)
//     and a TxPayload's response_payload bytes (endorsers). Nothing is ever
//     re-marshalled to be verified.
//   - Hashes shared between nodes are over the fixed layouts in hash.go,
//     never over a protobuf encoding, which is not canonical.
//   - A Tx is decoded once where it enters a node and then passed on
//     unchanged; it is immutable after DecodeTx returns.
package api
