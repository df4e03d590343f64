package ledger

import (
	"encoding/hex"
	"errors"
)

// Sentinel errors. Errors returned by the store wrap one of these (check
// with errors.Is) and name the block, the values and the reason.
var (
	// ErrNotFound: no block with that number (it is at or past the height).
	ErrNotFound = errors.New("ledger: not found")
	// ErrOutOfOrder: Append was given a block number other than the next.
	ErrOutOfOrder = errors.New("ledger: block out of order")
	// ErrChainBroken: a block's previous hash is not the header hash of the
	// block before it.
	ErrChainBroken = errors.New("ledger: chain broken")
	// ErrCorrupt: stored bytes fail their checksum, do not decode, or
	// disagree with the index or with the hash chain.
	ErrCorrupt = errors.New("ledger: corruption")
	// ErrClosed: the store or iterator has been closed.
	ErrClosed = errors.New("ledger: closed")
)

// shortHex renders a hash for an error message: the first 8 bytes in hex,
// or "(empty)".
func shortHex(b []byte) string {
	if len(b) == 0 {
		return "(empty)"
	}
	if len(b) > 8 {
		return hex.EncodeToString(b[:8]) + "…"
	}
	return hex.EncodeToString(b)
}
