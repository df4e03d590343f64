package badger

import (
	"errors"
	"slices"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// Options configures a DB. The zero value is valid and means every default.
// The defaults bound Badger's memory to about 32 MiB of memtables, the
// block cache and the index cache (Badger's own defaults: 320 MiB of
// memtables, a 256 MiB cache, unbounded indexes); the package
// documentation gives the reasons and measurements.
type Options struct {
	// CacheSize is the block cache in bytes. Default 128 MiB, as pebbledb.
	CacheSize int64
	// IndexCacheSize bounds the memory of table indexes and bloom filters,
	// which Badger otherwise keeps for every table, growing with the
	// state. Default 16 MiB.
	IndexCacheSize int64
	// MemTableSize is the size of one memtable in bytes. It also caps one
	// batch: Badger refuses a transaction over 15% of it, counting values
	// of ValueThreshold or more as pointers. Default 16 MiB (batches up to
	// about 2.4 MiB of small values); 1 MiB to 1 GiB.
	MemTableSize int64
	// NumMemtables is how many memtables Badger keeps before it stalls
	// writes on a flush. Default 2 (Badger: 5); 1 to 16.
	NumMemtables int
	// Compression of table blocks: "snappy" (default), "zstd" or "none".
	Compression string
	// SyncWrites syncs every write, whatever the caller asks. Default
	// false: writes are synced when the caller asks (sync), and a machine
	// crash (not a process crash) may lose unsynced batches.
	SyncWrites bool
}

// Defaults.
const (
	DefaultCacheSize      = 128 << 20
	DefaultIndexCacheSize = 16 << 20
	DefaultMemTableSize   = 16 << 20
	DefaultNumMemtables   = 2
	DefaultCompression    = "snappy"
)

// Fixed choices (see badgerOptions).
const (
	// ValueThreshold: values of this many bytes or more go to the value
	// log.
	ValueThreshold = 4 << 10
	// ValueLogFileSize is the size of one value log file (Badger: 1 GiB).
	ValueLogFileSize = 64 << 20
	// valueLogGCInterval is how often the value log GC runs.
	valueLogGCInterval = 5 * time.Minute
)

// Compressions lists the allowed Compression values.
var Compressions = []string{"snappy", "zstd", "none"}

// EnsureDefaults replaces zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	statedb.SetDefault(&o.CacheSize, DefaultCacheSize)
	statedb.SetDefault(&o.IndexCacheSize, DefaultIndexCacheSize)
	statedb.SetDefault(&o.MemTableSize, DefaultMemTableSize)
	statedb.SetDefault(&o.NumMemtables, DefaultNumMemtables)
	statedb.SetDefault(&o.Compression, DefaultCompression)
}

// ErrBadOptions marks an invalid Options field; test with errors.Is.
var ErrBadOptions = errors.New("badger: invalid options")

// Validate reports every out-of-range field. Zero fields are valid: they
// mean the default.
func (o *Options) Validate() error {
	ck := statedb.OptionErrors{Sentinel: ErrBadOptions}
	ck.Size("CacheSize", o.CacheSize, 0)
	ck.Size("IndexCacheSize", o.IndexCacheSize, 0)
	if o.MemTableSize != 0 && (o.MemTableSize < 1<<20 || o.MemTableSize > 1<<30) {
		ck.Bad("MemTableSize", o.MemTableSize, "0 (default) or 1 MiB to 1 GiB")
	}
	if o.NumMemtables < 0 || o.NumMemtables > 16 {
		ck.Bad("NumMemtables", o.NumMemtables, "0 (default) or 1 to 16")
	}
	if o.Compression != "" && !slices.Contains(Compressions, o.Compression) {
		ck.Bad("Compression", o.Compression, "snappy, zstd or none")
	}
	return ck.Err()
}
