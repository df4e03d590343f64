package pebbledb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2/sstable"
)

// Options configures a DB. The zero value is valid and means every default.
type Options struct {
	// CacheSize is the block cache in bytes. Default 128 MiB: the cache
	// holds decompressed blocks, and a working set larger than it is read
	// and decompressed again at every miss (at 32 MiB, 64 MB of 64 KB
	// values read 11% slower than from bbolt; docs/statedb.md). Pebble
	// fills it as blocks are read, so a small state does not pay for it.
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
	// Compression compresses the blocks of the LSM tree's tables: "snappy"
	// (the default, as Pebble's), "minlz", "zstd" or "none".
	Compression string
	// BlobCompression compresses the blob files that hold separated values
	// (see ValueSeparation): "snappy" (the default), "minlz", "zstd" or
	// "none". With "none" a read that misses the block cache costs a copy
	// instead of decompressing the whole value (as Badger's value log and
	// WiscKey store values), at the price of writing every separated value
	// at full size: docs/statedb.md has the measured trade-off.
	BlobCompression string
}

// Defaults.
const (
	DefaultCacheSize                = 128 << 20
	DefaultMemTableSize             = 16 << 20
	DefaultBloomBitsPerKey          = 10
	DefaultMaxOpenFiles             = 1000
	DefaultMaxConcurrentCompactions = 2
	DefaultValueSeparation          = 4096
	DefaultCompression              = "snappy"
	DefaultBlobCompression          = "snappy"
)

// compressions maps Options.Compression and BlobCompression to Pebble's
// profiles. minlz is MinLZ on amd64 and Snappy on arm64, where MinLZ has
// no assembly.
var compressions = map[string]*sstable.CompressionProfile{
	"snappy": sstable.SnappyCompression,
	"minlz":  sstable.FastestCompression,
	"zstd":   sstable.ZstdCompression,
	"none":   sstable.NoCompression,
}

// Compressions lists the allowed Options.Compression and BlobCompression
// values.
var Compressions = []string{"snappy", "minlz", "zstd", "none"}

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
	if o.Compression == "" {
		o.Compression = DefaultCompression
	}
	if o.BlobCompression == "" {
		o.BlobCompression = DefaultBlobCompression
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
	if c := o.Compression; c != "" && compressions[c] == nil {
		bad("Compression", fmt.Sprintf("%q", c), "one of "+strings.Join(Compressions, ", ")+` ("" means snappy)`)
	}
	if c := o.BlobCompression; c != "" && compressions[c] == nil {
		bad("BlobCompression", fmt.Sprintf("%q", c), "one of "+strings.Join(Compressions, ", ")+` ("" means snappy)`)
	}
	return errors.Join(errs...)
}
