package orderer

import (
	"fmt"
	"time"
)

// Checkpoints says which blocks the orderer signs. The zero value signs
// every block: Fabric's rule, and what a peer that trusts no connection
// needs. With either field set, the orderer signs only checkpoint blocks:
// a block whose number is a multiple of Blocks, or the first block sealed
// Interval or more after the last signed one. Block 0 is always signed.
//
// A checkpoint's signature is over its header hash, and each header holds
// the hash of the one before it, so it vouches for every block since the
// previous checkpoint. Peers of such a channel accept the unsigned blocks
// in between on the strength of the stream they arrive on: mutual TLS with
// a certificate of one of the channel's orderer orgs (the crash-fault
// model StreamChain runs in; docs/streaming.md). What it saves is one
// ECDSA signature per block on the orderer and one verification per block
// on every peer, which in stream mode, where blocks are small, is a large
// share of the crypto per transaction.
//
// Each member of a Raft cluster decides for its own copy of the chain (the
// signature is metadata, outside the hash chain), so the interval rule
// needs no agreement.
type Checkpoints struct {
	// Blocks, if above 0, signs every block whose number is a multiple
	// of it.
	Blocks int
	// Interval, if above 0, signs the first block sealed Interval or more
	// after the last signed block. A quiet channel's tail stays unsigned
	// until its next block.
	Interval time.Duration
}

// Enabled reports whether only checkpoints are signed.
func (c Checkpoints) Enabled() bool { return c.Blocks > 0 || c.Interval > 0 }

// Validate reports the first invalid field, naming its value and what is
// allowed.
func (c Checkpoints) Validate() error {
	switch {
	case c.Blocks < 0 || c.Blocks > 1_000_000:
		return fmt.Errorf("%w: Checkpoints.Blocks is %d, want 0 (no count rule) to 1000000", ErrBadConfig, c.Blocks)
	case c.Interval < 0 || c.Interval > time.Hour:
		return fmt.Errorf("%w: Checkpoints.Interval is %s, want 0 (no time rule) to 1h", ErrBadConfig, c.Interval)
	}
	return nil
}

// checkpointer is the seal stage's decision, kept apart from the clock
// like the cutter: time arrives as an argument.
type checkpointer struct {
	cfg    Checkpoints
	signed time.Time // when the last signed block was sealed
}

// sign reports whether block n, sealed at now, gets the orderer's
// signature, and records it if so.
func (k *checkpointer) sign(n uint64, now time.Time) bool {
	ok := !k.cfg.Enabled() || n == 0 ||
		k.cfg.Blocks > 0 && n%uint64(k.cfg.Blocks) == 0 ||
		k.cfg.Interval > 0 && now.Sub(k.signed) >= k.cfg.Interval
	if ok {
		k.signed = now
	}
	return ok
}
