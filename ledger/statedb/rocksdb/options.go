package rocksdb

import (
	"errors"
	"slices"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// Format is the on-disk format this package writes and reads.
var Format = statedb.Format{Backend: "rocksdb", Version: 1}

// Options configures a DB. The zero value is valid and means every default.
type Options struct {
	// CacheSize is the block cache in bytes. Default 128 MiB, as pebbledb.
	CacheSize int64
	// WriteBufferSize is one memtable in bytes. Default 16 MiB; at most
	// 1 GiB.
	WriteBufferSize int
	// Compression of table blocks: "lz4" (default), "snappy", "zstd" or
	// "none".
	Compression string
}

// Defaults.
const (
	DefaultCacheSize       = 128 << 20
	DefaultWriteBufferSize = 16 << 20
	DefaultCompression     = "lz4"
)

// Compressions lists the allowed Compression values.
var Compressions = []string{"lz4", "snappy", "zstd", "none"}

// EnsureDefaults replaces zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	statedb.SetDefault(&o.CacheSize, DefaultCacheSize)
	statedb.SetDefault(&o.WriteBufferSize, DefaultWriteBufferSize)
	statedb.SetDefault(&o.Compression, DefaultCompression)
}

// ErrBadOptions marks an invalid Options field; test with errors.Is.
var ErrBadOptions = errors.New("rocksdb: invalid options")

// Validate reports every out-of-range field. Zero fields are valid: they
// mean the default.
func (o *Options) Validate() error {
	ck := statedb.OptionErrors{Sentinel: ErrBadOptions}
	ck.Size("CacheSize", o.CacheSize, 0)
	ck.Size("WriteBufferSize", int64(o.WriteBufferSize), 1<<30)
	if o.Compression != "" && !slices.Contains(Compressions, o.Compression) {
		ck.Bad("Compression", o.Compression, "lz4, snappy, zstd or none")
	}
	return ck.Err()
}
