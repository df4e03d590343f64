package committer

import (
	"fmt"
	"runtime"
	"time"
)

// Mode selects how stage 2 validates the transactions of one block.
type Mode uint8

const (
	// Sequential checks and applies transactions in block order.
	Sequential Mode = iota
	// Parallel schedules them along the block's dependency graph.
	Parallel
)

func (m Mode) String() string {
	switch m {
	case Sequential:
		return "sequential"
	case Parallel:
		return "parallel"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode parses "sequential" or "parallel".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "sequential":
		return Sequential, nil
	case "parallel":
		return Parallel, nil
	}
	return 0, fmt.Errorf("committer: unknown validation mode %q: want sequential or parallel", s)
}

// Durability says when a commit is announced (to subscribers, hence to
// clients): see "Durability" in the package documentation.
type Durability uint8

const (
	// Durable announces a block after the block store's fsync.
	Durable Durability = iota
	// Relaxed announces a block once it is written and applied; the block
	// store is fsynced within Options.FlushInterval.
	Relaxed
)

func (d Durability) String() string {
	switch d {
	case Durable:
		return "durable"
	case Relaxed:
		return "relaxed"
	}
	return fmt.Sprintf("Durability(%d)", uint8(d))
}

// ParseDurability parses "durable" or "relaxed".
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "durable":
		return Durable, nil
	case "relaxed":
		return Relaxed, nil
	}
	return 0, fmt.Errorf("committer: unknown durability %q: want durable or relaxed", s)
}

// DefaultFlushInterval is Options.FlushInterval's default.
const DefaultFlushInterval = 20 * time.Millisecond

// Options tune the pipeline. The zero value is valid after EnsureDefaults.
type Options struct {
	// Mode of stage 2. Default Sequential.
	Mode Mode
	// VerifyWorkers run stage 1. Default runtime.NumCPU().
	VerifyWorkers int
	// ApplyWorkers run stage 2 in Parallel mode. Default runtime.NumCPU().
	ApplyWorkers int
	// MaxGroup is the most blocks stage 3 commits with one fsync. Default 256.
	MaxGroup int
	// Window is the most blocks between Deliver and stage 3 (received but
	// not yet persisted); Deliver blocks when it is full. Default 512.
	Window int
	// WindowBytes bounds the same window by the delivered blocks' bytes, so
	// that a burst of large blocks cannot fill memory with decoded
	// transactions, overlay entries and one huge state batch. A single
	// block larger than it is still admitted alone. Default 8 MiB.
	WindowBytes int
	// SyncState also fsyncs the state batch. Never needed for safety (the
	// block store is synced and replayed on start); default false.
	SyncState bool
	// Durability: Durable (the default) or Relaxed.
	Durability Durability
	// FlushInterval bounds, in Relaxed, how long an announced block may
	// wait for the block store's fsync. Default DefaultFlushInterval.
	FlushInterval time.Duration
	// StateCacheBytes bounds the cache of recently written, persisted
	// values that endorsers and stage 2 read before the state database
	// (see view). Default DefaultStateCacheBytes; -1 turns it off.
	StateCacheBytes int64
	// OnBusy, if set, is told of each stage's busy intervals (see
	// BusyFunc). Metrics counts busy time whether or not it is set.
	OnBusy BusyFunc
	// VerifyBatch is how many transactions one stage-1 job checks, with
	// their Ed25519 signatures as one batch (identity.Batch; see
	// verifyTxs): 1 checks every transaction alone and every signature
	// one by one; 0 (the default) picks ceil(block size / VerifyWorkers)
	// when an org of the channel has an Ed25519 CA
	// (identity.Registry.UsesEd25519), so each worker gets one batch of a
	// block, and 1 otherwise. The codes are the same whatever it is.
	VerifyBatch int
	// Reparse decodes every block and transaction again in stages 2 and
	// 3, as a peer without a block cache (Fabric's vanilla peer) does.
	// For the energy bench only, to measure what parse-once saves; a
	// node never sets it.
	Reparse bool
}

// DefaultStateCacheBytes is Options.StateCacheBytes's default.
const DefaultStateCacheBytes = 16 << 20

// EnsureDefaults fills in zero fields.
func (o *Options) EnsureDefaults() {
	if o.VerifyWorkers == 0 {
		o.VerifyWorkers = runtime.NumCPU()
	}
	if o.ApplyWorkers == 0 {
		o.ApplyWorkers = runtime.NumCPU()
	}
	if o.MaxGroup == 0 {
		o.MaxGroup = 256
	}
	if o.Window == 0 {
		o.Window = 512
	}
	if o.WindowBytes == 0 {
		o.WindowBytes = 8 << 20
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.StateCacheBytes == 0 {
		o.StateCacheBytes = DefaultStateCacheBytes
	}
}

// Validate reports the first invalid field.
func (o *Options) Validate() error {
	switch {
	case o.Mode != Sequential && o.Mode != Parallel:
		return fmt.Errorf("committer: Options.Mode %d: want Sequential or Parallel", o.Mode)
	case o.VerifyWorkers < 1 || o.VerifyWorkers > 1024:
		return fmt.Errorf("committer: Options.VerifyWorkers %d: want 1 to 1024", o.VerifyWorkers)
	case o.ApplyWorkers < 1 || o.ApplyWorkers > 1024:
		return fmt.Errorf("committer: Options.ApplyWorkers %d: want 1 to 1024", o.ApplyWorkers)
	case o.MaxGroup < 1 || o.MaxGroup > 65536:
		return fmt.Errorf("committer: Options.MaxGroup %d: want 1 to 65536", o.MaxGroup)
	case o.Window < 2 || o.Window > 1<<20:
		return fmt.Errorf("committer: Options.Window %d: want 2 to 1048576", o.Window)
	case o.WindowBytes < 1<<10:
		return fmt.Errorf("committer: Options.WindowBytes %d: want at least 1024", o.WindowBytes)
	case o.Durability != Durable && o.Durability != Relaxed:
		return fmt.Errorf("committer: Options.Durability %d: want Durable or Relaxed", o.Durability)
	case o.FlushInterval < time.Millisecond || o.FlushInterval > 10*time.Second:
		return fmt.Errorf("committer: Options.FlushInterval %v: want 1ms to 10s", o.FlushInterval)
	case o.VerifyBatch < 0 || o.VerifyBatch > 1<<16:
		return fmt.Errorf("committer: Options.VerifyBatch %d: want 0 (auto) to 65536", o.VerifyBatch)
	case o.StateCacheBytes < -1 || o.StateCacheBytes > 1<<46:
		return fmt.Errorf("committer: Options.StateCacheBytes %d: want -1 (off) or 0 to 2^46", o.StateCacheBytes)
	}
	return nil
}
