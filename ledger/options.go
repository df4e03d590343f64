package ledger

import (
	"fmt"
	"log/slog"
)

// DefaultSegmentSize is the size at which a segment file is rolled over.
const DefaultSegmentSize = 64 << 20

// MinSegmentSize is the smallest SegmentSize that Validate accepts.
const MinSegmentSize = 256

// Options configure a BlockStore. The zero value, after EnsureDefaults, is
// the production configuration.
type Options struct {
	// SegmentSize is the size in bytes at which a segment file is rolled
	// over; a single frame larger than it gets a segment of its own.
	// Default DefaultSegmentSize (64 MiB).
	SegmentSize int64
	// NoSync skips every fsync. For tests and benchmarks only: a machine
	// crash can then lose blocks that Append reported stored.
	NoSync bool
	// SkipScrub skips reading back every indexed frame at open. The scrub
	// is what finds a damaged block behind an intact index (see "Damage
	// and replacement" in the package documentation); it reads the whole
	// store once per open. For tests and benchmarks that reopen large
	// stores.
	SkipScrub bool
	// Logger receives what recovery finds: a torn tail cut (WARN), a
	// damaged block or a quarantined tail (ERROR). Default: discard.
	Logger *slog.Logger
}

// EnsureDefaults fills in zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports the first invalid field, naming its value and what is
// allowed.
func (o *Options) Validate() error {
	if o.SegmentSize < MinSegmentSize {
		return fmt.Errorf("ledger: invalid Options.SegmentSize %d: want at least %d bytes (0 means the default, %d)",
			o.SegmentSize, MinSegmentSize, DefaultSegmentSize)
	}
	return nil
}
