package pebbledb

import (
	"errors"
	"fmt"
)

// Options configures a DB. The zero value is valid and means every default.
type Options struct {
	// CacheSize is the block cache in bytes. Default 32 MiB: with the
	// memtables, a peer holding 1M keys stays well under 300 MiB RSS.
	CacheSize int64
	// MemTableSize is the size of one memtable in bytes; Pebble keeps up to
	// MemTableStopWritesThreshold of them (its default, 4). Default 16 MiB;
	// must be less than 4 GiB.
	MemTableSize uint64
	// BloomBitsPerKey sizes the per-table bloom filters that let Get skip
	// tables not holding a key (misses are common: every MVCC read of a new
	// key is one). Default 10 (about 1% false positives); -1 disables the
	// filters; at most 32.
	BloomBitsPerKey int
	// MaxOpenFiles bounds the table files Pebble keeps open. Default 1000.
	MaxOpenFiles int
	// ValueSeparation is the smallest value, in bytes, that Pebble stores
	// in a blob file beside the LSM tree instead of in it (value
	// separation, as Badger's value log and WiscKey): compactions then
	// move a reference, not the value, and a table block holds many keys.
	// Default 4096 (Badger's threshold); -1 keeps every value in the tree;
	// otherwise 256 to 1 GiB.
	ValueSeparation int
	// MaxConcurrentCompactions bounds background compactions. Default 2,
	// so a bulk load (a catch-up after a restart) does not stall on
	// compaction debt; at most 64.
	MaxConcurrentCompactions int
}

// Defaults.
const (
	DefaultCacheSize                = 32 << 20
	DefaultMemTableSize             = 16 << 20
	DefaultBloomBitsPerKey          = 10
	DefaultMaxOpenFiles             = 1000
	DefaultMaxConcurrentCompactions = 2
	DefaultValueSeparation          = 4096
)

// EnsureDefaults replaces zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.BloomBitsPerKey == 0 {
		o.BloomBitsPerKey = DefaultBloomBitsPerKey
	}
	if o.MaxOpenFiles == 0 {
		o.MaxOpenFiles = DefaultMaxOpenFiles
	}
	if o.MaxConcurrentCompactions == 0 {
		o.MaxConcurrentCompactions = DefaultMaxConcurrentCompactions
	}
	if o.ValueSeparation == 0 {
		o.ValueSeparation = DefaultValueSeparation
	}
}

// ErrBadOptions marks an invalid Options field; test with errors.Is.
var ErrBadOptions = errors.New("pebbledb: invalid options")

// Validate reports every out-of-range field. Zero fields are valid: they
// mean the default.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field string, value any, want string) {
		errs = append(errs, fmt.Errorf("%w: %s = %v, want %s", ErrBadOptions, field, value, want))
	}
	if o.CacheSize < 0 {
		bad("CacheSize", o.CacheSize, "0 (default) or a positive byte count")
	}
	if o.MemTableSize >= 4<<30 {
		bad("MemTableSize", o.MemTableSize, "less than 4 GiB")
	}
	if o.BloomBitsPerKey < -1 || o.BloomBitsPerKey > 32 {
		bad("BloomBitsPerKey", o.BloomBitsPerKey, "-1 (no filter), 0 (default) or 1 to 32")
	}
	if o.MaxOpenFiles < 0 {
		bad("MaxOpenFiles", o.MaxOpenFiles, "0 (default) or positive")
	}
	if o.MaxConcurrentCompactions < 0 || o.MaxConcurrentCompactions > 64 {
		bad("MaxConcurrentCompactions", o.MaxConcurrentCompactions, "0 (default) or 1 to 64")
	}
	if v := o.ValueSeparation; v != 0 && v != -1 && (v < 256 || v > 1<<30) {
		bad("ValueSeparation", v, "-1 (off), 0 (default 4096) or 256 to 1 GiB")
	}
	return errors.Join(errs...)
}
