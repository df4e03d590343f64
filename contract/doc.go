// Package contract is the API that smart-contract authors write against,
// importable by users. A contract is a Go value whose exported methods are
// its functions; NewRouter turns it into a Contract that maps a
// transaction's function name (Go, lowerCamel or snake_case spelling) and
// byte arguments onto them, with errors that name the function and the
// argument. During endorsement each call gets a Stub: its view of
// the channel's committed state in the contract's own namespace, plus the
// transaction's context. Whatever the call reads and writes through the Stub
// becomes the transaction's read/write set, which every peer re-checks at
// validation (MVCC), so a contract never needs locks.
//
// Invariants the endorser keeps for a contract:
//   - Reads see committed state plus the call's own earlier writes
//     (read-your-writes, unlike Fabric); the version recorded for a read is
//     the committed one.
//   - A call is deterministic given its stub: contracts must not read the
//     clock, random sources or the network; use Stub.Timestamp and Stub.TxID.
//   - Writes go only to the contract's own namespace.
package contract
