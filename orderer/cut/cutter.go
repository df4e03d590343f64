package cut

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of Config: strand's, which every command and file shares
// (the block size and batch timeout of `strand demo`, `bench`, `crypto
// gen` and `net up`, and of a channel file that names none). Fabric's are
// 500 transactions and 2 s (BatchSize.MaxMessageCount, BatchTimeout),
// which cost a lightly loaded network seconds per transaction; strand
// cuts small blocks fast and lets load make them bigger.
const (
	DefaultMaxTxs   = 100
	DefaultMaxBytes = 10 << 20
	DefaultTimeout  = 2 * time.Millisecond
)

// Mode is how the cutter decides that a block ends.
type Mode string

const (
	// ModeBlock cuts a block when it is full (MaxTxs, MaxBytes) or Timeout
	// after its first transaction: Fabric's batching.
	ModeBlock Mode = "block"
	// ModeStream cuts the pending transactions as soon as the seal stage is
	// free (Cutter.Free), and when they reach MaxTxs or MaxBytes; there is no
	// timer. A block holds one transaction under light load and grows with
	// the load (StreamChain).
	ModeStream Mode = "stream"
)

// ErrBadConfig: a Config field is out of range.
var ErrBadConfig = errors.New("cut: invalid config")

// Config says when the cutter closes a block.
type Config struct {
	// Mode is ModeBlock or ModeStream. Default ModeBlock.
	Mode Mode
	// MaxTxs cuts a block once it holds this many transactions.
	// Default DefaultMaxTxs (100).
	MaxTxs int
	// MaxBytes bounds the transaction bytes of a block: a transaction that
	// would take the pending block past it cuts the pending block first,
	// and a block that reaches it exactly is cut at once. A transaction
	// larger than MaxBytes forms a block alone. Default DefaultMaxBytes
	// (10 MiB).
	MaxBytes int
	// Timeout cuts a non-empty pending block this long after its first
	// transaction arrived (block mode; stream mode has no timer). Default
	// DefaultTimeout (2 ms).
	Timeout time.Duration
}

// EnsureDefaults fills in zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	if c.Mode == "" {
		c.Mode = ModeBlock
	}
	if c.MaxTxs == 0 {
		c.MaxTxs = DefaultMaxTxs
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
}

// Validate reports the first invalid field, naming its value and what is
// allowed. Zero fields are invalid: call EnsureDefaults first.
func (c Config) Validate() error {
	switch {
	case c.MaxTxs < 1:
		return fmt.Errorf("%w: MaxTxs is %d, want at least 1 (0 means the default, %d)", ErrBadConfig, c.MaxTxs, DefaultMaxTxs)
	case c.MaxBytes < 1:
		return fmt.Errorf("%w: MaxBytes is %d, want at least 1 (0 means the default, %d)", ErrBadConfig, c.MaxBytes, DefaultMaxBytes)
	case c.Timeout <= 0:
		return fmt.Errorf("%w: Timeout is %s, want more than 0 (0 means the default, %s)", ErrBadConfig, c.Timeout, DefaultTimeout)
	case c.Mode != ModeBlock && c.Mode != ModeStream:
		return fmt.Errorf("%w: Mode is %q, want %q or %q (\"\" means the default, %q)", ErrBadConfig, c.Mode, ModeBlock, ModeStream, ModeBlock)
	}
	return nil
}

// Cutter decides where blocks end. It is a pure state machine: it starts
// no goroutine, reads no clock and does no I/O; time arrives as an
// argument. Every method returns the batches it cut, oldest first, and a
// batch is never empty. Transactions leave in the order they were added.
// A Cutter is for one goroutine (the orderer's loop, through Flow).
//
// The caller's contract: call Add for each admitted transaction, and Tick
// no later than shortly after the time Deadline reports (the loop arms a
// timer for it); Tick before the deadline cuts nothing. In stream mode,
// also call Free whenever the next stage is idle: after it finished its
// last batch, and after an Add while it is still idle. Flush cuts whatever
// is pending (on shutdown).
type Cutter struct {
	cfg      Config
	pending  [][]byte
	bytes    int
	deadline time.Time // valid while pending is non-empty
}

// NewCutter returns a cutter for cfg, with zero fields set to their
// defaults. It panics if cfg is invalid: callers validate configuration
// where it is read (orderer.New does).
func NewCutter(cfg Config) *Cutter {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return &Cutter{cfg: cfg}
}

// Add appends tx, received at now, to the pending batch and returns the
// batches this cut: none, one, or two (the pending batch, cut because tx
// would overflow MaxBytes, and then tx alone if it is larger than MaxBytes
// or fills a batch by itself).
func (c *Cutter) Add(tx []byte, now time.Time) [][][]byte {
	var out [][][]byte
	size := len(tx)
	if len(c.pending) > 0 && c.bytes+size > c.cfg.MaxBytes {
		out = append(out, c.cut())
	}
	if size > c.cfg.MaxBytes {
		return append(out, [][]byte{tx})
	}
	if len(c.pending) == 0 {
		if c.cfg.Mode == ModeBlock {
			c.deadline = now.Add(c.cfg.Timeout)
		}
		c.pending = make([][]byte, 0, min(c.cfg.MaxTxs, 64))
	}
	c.pending = append(c.pending, tx)
	c.bytes += size
	if len(c.pending) >= c.cfg.MaxTxs || c.bytes >= c.cfg.MaxBytes {
		out = append(out, c.cut())
	}
	return out
}

// Deadline returns when the pending batch times out, and false when
// nothing is pending or in stream mode (which has no timer).
func (c *Cutter) Deadline() (time.Time, bool) {
	return c.deadline, len(c.pending) > 0 && c.cfg.Mode == ModeBlock
}

// Tick cuts the pending batch if its deadline is at or before now, and
// returns it (nil otherwise, and always in stream mode).
func (c *Cutter) Tick(now time.Time) [][]byte {
	if len(c.pending) == 0 || c.cfg.Mode != ModeBlock || now.Before(c.deadline) {
		return nil
	}
	return c.cut()
}

// Free tells the cutter, at now, that the next stage is idle. In stream
// mode it cuts and returns whatever is pending, which Add has kept within
// MaxTxs and MaxBytes (nil if nothing is); in block mode it cuts nothing.
func (c *Cutter) Free(now time.Time) [][]byte {
	if len(c.pending) == 0 || c.cfg.Mode != ModeStream {
		return nil
	}
	return c.cut()
}

// Flush cuts whatever is pending (nil if nothing is).
func (c *Cutter) Flush() [][]byte {
	if len(c.pending) == 0 {
		return nil
	}
	return c.cut()
}

// Pending returns the number of transactions and bytes waiting.
func (c *Cutter) Pending() (txs, bytes int) { return len(c.pending), c.bytes }

func (c *Cutter) cut() [][]byte {
	b := c.pending
	c.pending, c.bytes, c.deadline = nil, 0, time.Time{}
	return b
}
