package tiered

import (
	"errors"
	"fmt"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
)

// Options configures a DB. The zero value is valid and means every
// default.
//
// The memory tier holds the newest version of every key written since the
// storage tier's savepoint, and as many older (already durable) versions
// as fit in MemoryBytes. The flusher writes the newest versions through to
// the storage tier every FlushBlocks blocks or FlushInterval, whichever
// comes first, and sooner when an Apply waits for room or for sync; the
// blocks above the storage savepoint are what a restart re-applies from
// the block store, so the two bound that replay.
type Options struct {
	// CacheBytes bounds the local cache of recently read and written
	// values. Default 64 MiB; 1 KiB to 1 TiB.
	CacheBytes int64
	// NoCache leaves the local cache out: a memory node serving the
	// memory and storage tiers runs without one, since its callers keep
	// their own. CacheBytes is then unused.
	NoCache bool
	// MemoryBytes bounds the memory tier. Default 256 MiB; 4 KiB to
	// 1 TiB. Apply waits (never evicts) when a batch does not fit: the
	// flusher makes room by writing versions through and evicting durable
	// ones. A batch larger than the whole tier is admitted alone.
	MemoryBytes int64
	// FlushBlocks starts a flush once this many blocks are above the
	// storage savepoint. Default 64; 1 to 1000000.
	FlushBlocks uint64
	// FlushInterval starts a flush this long after the last one if
	// blocks are waiting. Default 1s; 1ms to 1h.
	FlushInterval time.Duration
	// Storage tunes the Pebble storage tier.
	Storage pebbledb.Options
}

// Defaults.
const (
	DefaultCacheBytes    = 64 << 20
	DefaultMemoryBytes   = 256 << 20
	DefaultFlushBlocks   = 64
	DefaultFlushInterval = time.Second
)

// Bounds of the byte sizes.
const (
	minCacheBytes  = 1 << 10
	minMemoryBytes = 4 << 10
	maxBytes       = 1 << 40
)

// ErrBadOptions marks an invalid Options field; test with errors.Is.
var ErrBadOptions = errors.New("tiered: invalid options")

// EnsureDefaults replaces zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	statedb.SetDefault(&o.CacheBytes, DefaultCacheBytes)
	statedb.SetDefault(&o.MemoryBytes, DefaultMemoryBytes)
	statedb.SetDefault(&o.FlushBlocks, DefaultFlushBlocks)
	statedb.SetDefault(&o.FlushInterval, DefaultFlushInterval)
	o.Storage.EnsureDefaults()
}

// Validate reports every out-of-range field. Zero fields are valid: they
// mean the default.
func (o *Options) Validate() error {
	ck := statedb.OptionErrors{Sentinel: ErrBadOptions}
	sizeIn := func(field string, v, lo int64, def string) {
		if v != 0 && (v < lo || v > maxBytes) {
			ck.Bad(field, v, fmt.Sprintf("0 (default %s) or %d to %d bytes", def, lo, int64(maxBytes)))
		}
	}
	sizeIn("CacheBytes", o.CacheBytes, minCacheBytes, "64 MiB")
	sizeIn("MemoryBytes", o.MemoryBytes, minMemoryBytes, "256 MiB")
	if o.FlushBlocks > 1e6 {
		ck.Bad("FlushBlocks", o.FlushBlocks, "0 (default 64) or 1 to 1000000")
	}
	if iv := o.FlushInterval; iv != 0 && (iv < time.Millisecond || iv > time.Hour) {
		ck.Bad("FlushInterval", iv, "0 (default 1s) or 1ms to 1h")
	}
	var errs []error
	if err := ck.Err(); err != nil {
		errs = append(errs, err)
	}
	if err := o.Storage.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: Storage: %w", ErrBadOptions, err))
	}
	return errors.Join(errs...)
}
