package memdb

import (
	"errors"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// Options configures a checkpointing DB (Open). The zero value is valid and
// means every default.
//
// A checkpoint starts when EveryBlocks blocks have been applied since the
// last one, or Interval has passed and the state has changed since the
// last one, whichever comes first; one runs at a time, and triggers that
// arrive meanwhile coalesce into the next. The blocks applied since the
// last checkpoint are what a restart replays from the block store, so the
// two bound the replay after a crash; each checkpoint costs a write of the
// whole state.
type Options struct {
	// EveryBlocks starts a checkpoint after this many blocks. Default
	// 1000; 1 to 1e9.
	EveryBlocks uint64
	// Interval starts a checkpoint after this long if the state changed.
	// Default 10s; 10ms to 24h.
	Interval time.Duration
}

// Defaults.
const (
	DefaultEveryBlocks = 1000
	DefaultInterval    = 10 * time.Second
)

// ErrBadOptions marks an invalid Options field; test with errors.Is.
var ErrBadOptions = errors.New("memdb: invalid options")

// EnsureDefaults replaces zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	statedb.SetDefault(&o.EveryBlocks, DefaultEveryBlocks)
	statedb.SetDefault(&o.Interval, DefaultInterval)
}

// Validate reports every out-of-range field. Zero fields are valid: they
// mean the default.
func (o *Options) Validate() error {
	ck := statedb.OptionErrors{Sentinel: ErrBadOptions}
	if o.EveryBlocks > 1e9 {
		ck.Bad("EveryBlocks", o.EveryBlocks, "0 (default 1000) or 1 to 1000000000")
	}
	if o.Interval != 0 && (o.Interval < 10*time.Millisecond || o.Interval > 24*time.Hour) {
		ck.Bad("Interval", o.Interval, "0 (default 10s) or 10ms to 24h")
	}
	return ck.Err()
}
