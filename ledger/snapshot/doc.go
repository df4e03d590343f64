// Package snapshot is strand's ledger snapshot: one portable file that
// holds a peer's ledger at a height N, from which a new peer joins a
// channel without replaying blocks 0..N-1 (Fabric 2.3's ledger snapshots
// are the model). It holds what the peer needs to continue from block N:
// the channel (name and genesis block), the state at height N (every
// namespace, key, value and version), every transaction id committed
// below N that claims its id (api.TxIDCounts) with its block, position and
// code (for duplicate detection and the commit status of old ids), and
// the header hash of block N-1 (so block N's link is checked as usual).
//
// # File format (version 1)
//
// Integers little endian; uvarint is encoding/binary's.
//
//	"strand-snapshot\n" | u32 format version
//	| records: one byte tag | uvarint payload length | payload
//	| 32-byte SHA-256 of every byte before it
//
// Records, in this order:
//
//	'H' once:   uvarint channel length, channel, uvarint genesis length, genesis block
//	'S' any:    uvarint namespace length, namespace, uvarint key length, key,
//	            uvarint version block, uvarint version tx, value (the rest)
//	'T' any:    uvarint block, uvarint position, one byte code, tx id (the rest)
//	'E' once:   uvarint height N, 32-byte header hash of block N-1,
//	            uvarint count of 'S' records, uvarint count of 'T' records
//
// # Invariants
//
// A file that Read accepts, and every file Writer writes, has: the right
// magic, version and checksum; records in the order above with no bytes
// after 'E' but the checksum; 'S' records strictly ascending by encoded
// key (namespace, NUL, key: so no key twice) with valid namespaces and
// versions below N; 'T' records strictly ascending by id, with non-empty
// ids, blocks below N and codes that claim their id; N >= 1; counts that
// match. Read checks the checksum over the whole file before it decodes a
// record, so a caller's visitor never sees a record of a damaged file.
//
// A snapshot is consistent: Export reads the state from one point-in-time
// view and takes N from that view's savepoint, then lists the tx ids
// indexed below N and the hash of block N-1, which the block store holds
// for good once it has reached N (a block store is never behind its
// state; Export refuses one that is).
//
// # Caller's duties
//
// Read and Verify take files from users: they bound every length by what
// is left of the file and by the limits below, and return ErrCorrupt or
// ErrVersion naming the file and what is wrong. Load writes into an empty
// block store directory and an empty state database; if it fails, the
// caller removes both.
package snapshot
