package leveldb

import (
	"errors"
	"slices"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// Options configures a DB. The zero value is valid and means every default.
type Options struct {
	// CacheSize is the block cache in bytes. Default 128 MiB, as pebbledb.
	CacheSize int64
	// WriteBufferSize is the memtable size in bytes; LevelDB holds up to
	// two. Default 16 MiB (goleveldb's own default, 4 MiB, makes a bulk
	// load flush and compact four times as often); at most 1 GiB.
	WriteBufferSize int
	// Compression of table blocks: "snappy" (default) or "none".
	Compression string
	// BloomBitsPerKey sizes the bloom filters that let Get skip tables
	// without the key. Default 10 (about 1% false positives); -1 disables
	// them; at most 32.
	BloomBitsPerKey int
	// MaxOpenFiles bounds the table files kept open. Default 500.
	MaxOpenFiles int
}

// Defaults.
const (
	DefaultCacheSize       = 128 << 20
	DefaultWriteBufferSize = 16 << 20
	DefaultCompression     = "snappy"
	DefaultBloomBitsPerKey = 10
	DefaultMaxOpenFiles    = 500
)

// Compressions lists the allowed Compression values.
var Compressions = []string{"snappy", "none"}

// EnsureDefaults replaces zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	statedb.SetDefault(&o.CacheSize, DefaultCacheSize)
	statedb.SetDefault(&o.WriteBufferSize, DefaultWriteBufferSize)
	statedb.SetDefault(&o.Compression, DefaultCompression)
	statedb.SetDefault(&o.BloomBitsPerKey, DefaultBloomBitsPerKey)
	statedb.SetDefault(&o.MaxOpenFiles, DefaultMaxOpenFiles)
}

// ErrBadOptions marks an invalid Options field; test with errors.Is.
var ErrBadOptions = errors.New("leveldb: invalid options")

// Validate reports every out-of-range field. Zero fields are valid: they
// mean the default.
func (o *Options) Validate() error {
	ck := statedb.OptionErrors{Sentinel: ErrBadOptions}
	ck.Size("CacheSize", o.CacheSize, 0)
	ck.Size("WriteBufferSize", int64(o.WriteBufferSize), 1<<30)
	if o.Compression != "" && !slices.Contains(Compressions, o.Compression) {
		ck.Bad("Compression", o.Compression, "snappy or none")
	}
	if o.BloomBitsPerKey < -1 || o.BloomBitsPerKey > 32 {
		ck.Bad("BloomBitsPerKey", o.BloomBitsPerKey, "-1 (no filter), 0 (default) or 1 to 32")
	}
	if o.MaxOpenFiles < 0 {
		ck.Bad("MaxOpenFiles", o.MaxOpenFiles, "0 (default) or positive")
	}
	return ck.Err()
}
