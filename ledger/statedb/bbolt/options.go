package bbolt

import (
	"errors"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// Options configures a DB. The zero value is valid and means every default.
type Options struct {
	// NoSync fsyncs a commit only when the caller asks (sync). Default
	// false: every commit is fsynced. With NoSync a power loss (not a
	// process crash) can corrupt the file; the peer then needs its state
	// directory removed, and rebuilds the state from the block store.
	NoSync bool
	// InitialMmapSize is the size in bytes of the first memory map of the
	// file. A commit that grows the file past the map waits for running
	// reads; a larger first map avoids those waits. Default 64 MiB; at
	// most 1 TiB.
	InitialMmapSize int64
}

// DefaultInitialMmapSize is InitialMmapSize's default.
const DefaultInitialMmapSize = 64 << 20

// EnsureDefaults replaces zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	statedb.SetDefault(&o.InitialMmapSize, DefaultInitialMmapSize)
}

// ErrBadOptions marks an invalid Options field; test with errors.Is.
var ErrBadOptions = errors.New("bbolt: invalid options")

// Validate reports every out-of-range field. Zero fields are valid: they
// mean the default.
func (o *Options) Validate() error {
	ck := statedb.OptionErrors{Sentinel: ErrBadOptions}
	ck.Size("InitialMmapSize", o.InitialMmapSize, 1<<40)
	return ck.Err()
}
