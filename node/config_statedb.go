package node

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
)

// StateDBConfig selects the world-state database and tunes its backend.
// Switching backend is one line (backend); the sections of the other
// backends may stay, they are checked but unused. 0 and "" mean the
// default everywhere.
type StateDBConfig struct {
	// Backend is one of backend.Names(): pebble (default), leveldb,
	// badger, bbolt, rocksdb (in binaries built with -tags rocksdb),
	// tiered (a cache and a bounded memory tier over Pebble, flushed in
	// the background), memnode (a memory node), redis (a Redis server),
	// memory-checkpoint (in memory, checkpointed to
	// disk), or memory (nothing survives). On-disk backends live in
	// dataDir/state.
	Backend string `yaml:"backend"`
	// CacheMB is the block cache in MiB of pebble, leveldb, badger,
	// rocksdb and tiered's storage tier. Default 128; 1 to 65536. bbolt reads through the OS page
	// cache and memory needs none.
	CacheMB int `yaml:"cacheMB"`
	// Pebble tunes the pebble backend.
	Pebble PebbleConfig `yaml:"pebble,omitempty"`
	// LevelDB tunes the leveldb backend.
	LevelDB LevelDBConfig `yaml:"leveldb,omitempty"`
	// Badger tunes the badger backend.
	Badger BadgerConfig `yaml:"badger,omitempty"`
	// Bbolt tunes the bbolt backend.
	Bbolt BboltConfig `yaml:"bbolt,omitempty"`
	// RocksDB tunes the rocksdb backend.
	RocksDB RocksDBConfig `yaml:"rocksdb,omitempty"`
	// Checkpoint tunes the memory-checkpoint backend.
	Checkpoint CheckpointConfig `yaml:"checkpoint,omitempty"`
	// Tiered tunes the tiered backend; its storage tier takes cacheMB and
	// the pebble section.
	Tiered TieredConfig `yaml:"tiered,omitempty"`
	// Memnode reaches the memory node of the memnode backend.
	Memnode MemnodeClientConfig `yaml:"memnode,omitempty"`
	// Redis reaches the Redis server of the redis backend.
	Redis RedisConfig `yaml:"redis,omitempty"`
}

// MemnodeClientConfig: where the peer's memory node is and how to trust
// it. The peer presents its own TLS key pair (tls.cert, tls.key).
type MemnodeClientConfig struct {
	Address     string        `yaml:"address,omitempty"`     // host:port of strand memnode
	CAs         []string      `yaml:"cas,omitempty"`         // PEM CA files that issued the memory node's TLS certificate
	CacheMB     int           `yaml:"cacheMB,omitempty"`     // the local cache; default 64; -1 none; 1 to 1048576
	CallTimeout time.Duration `yaml:"callTimeout,omitempty"` // one call; default 30s; 100ms to 10m
}

// TieredConfig mirrors tiered.Options.
type TieredConfig struct {
	CacheMB       int           `yaml:"cacheMB,omitempty"`       // local cache; default 64; 1 to 1048576
	MemoryMB      int           `yaml:"memoryMB,omitempty"`      // memory tier; default 256; 1 to 1048576
	FlushBlocks   int           `yaml:"flushBlocks,omitempty"`   // default 64; 1 to 1000000
	FlushInterval time.Duration `yaml:"flushInterval,omitempty"` // default 1s; 1ms to 1h
}

// CheckpointConfig mirrors memdb.Options: a checkpoint starts after
// everyBlocks blocks or after interval, whichever comes first.
type CheckpointConfig struct {
	EveryBlocks int           `yaml:"everyBlocks,omitempty"` // default 1000; 1 to 1000000000
	Interval    time.Duration `yaml:"interval,omitempty"`    // default 10s; 10ms to 24h
}

// PebbleConfig mirrors pebbledb.Options.
type PebbleConfig struct {
	// ValueSeparation: values of this many bytes or more go to blob files
	// beside the LSM tree. Default 4096; -1 off; else 256 to 1073741824.
	ValueSeparation int `yaml:"valueSeparation,omitempty"`
	// MemTableMB is one memtable's size; Pebble keeps up to four before
	// it stalls writes. Default 16; 1 to 4095. Fabric's LevelDB default
	// is 4, FlexChain's "large memtable" peer 4096 (docs/flexchain.md).
	MemTableMB      int    `yaml:"memTableMB,omitempty"`
	Compression     string `yaml:"compression,omitempty"`     // tables: snappy (default) | minlz | zstd | none
	BlobCompression string `yaml:"blobCompression,omitempty"` // separated values: snappy (default) | minlz | zstd | none
}

// LevelDBConfig mirrors leveldb.Options.
type LevelDBConfig struct {
	Compression   string `yaml:"compression,omitempty"`   // snappy (default) | none
	WriteBufferMB int    `yaml:"writeBufferMB,omitempty"` // default 16; 1 to 1024
}

// BadgerConfig mirrors badger.Options.
type BadgerConfig struct {
	Compression  string `yaml:"compression,omitempty"`  // snappy (default) | zstd | none
	MemTableMB   int    `yaml:"memTableMB,omitempty"`   // default 16; 1 to 1024; caps a state batch at 15%
	NumMemtables int    `yaml:"numMemtables,omitempty"` // default 2; 1 to 16
	IndexCacheMB int    `yaml:"indexCacheMB,omitempty"` // default 16; 1 to 65536
	SyncWrites   bool   `yaml:"syncWrites,omitempty"`   // default false: sync when pipeline.syncState asks
}

// BboltConfig mirrors bbolt.Options.
type BboltConfig struct {
	NoSync        bool `yaml:"noSync,omitempty"`        // default false: fsync every commit
	InitialMmapMB int  `yaml:"initialMmapMB,omitempty"` // default 64; 1 to 1048576
}

// RocksDBConfig mirrors rocksdb.Options.
type RocksDBConfig struct {
	Compression   string `yaml:"compression,omitempty"`   // lz4 (default) | snappy | zstd | none
	WriteBufferMB int    `yaml:"writeBufferMB,omitempty"` // default 16; 1 to 1024
}

func (c *StateDBConfig) ensureDefaults() {
	if c.Backend == "" {
		c.Backend = backend.Default
	}
	if c.CacheMB == 0 {
		c.CacheMB = 128
	}
}

// check reports every invalid field of the section.
func (c *StateDBConfig) check(ck *checker) {
	if err := backend.Check(c.Backend); err != nil {
		want := "one of " + strings.Join(backend.Names(), ", ")
		if c.Backend == "rocksdb" {
			want += " (this binary was built without rocksdb: build it with `go build -tags rocksdb ./cmd/strand`, which needs librocksdb-dev)"
		}
		ck.bad("stateDB.backend", c.Backend, want)
	}
	inRange := func(field string, v, lo, hi, def int) {
		if v != 0 && (v < lo || v > hi) {
			ck.bad(field, v, fmt.Sprintf("%d to %d (0 means %d)", lo, hi, def))
		}
	}
	oneOf := func(field, v string, allowed ...string) {
		if v != "" && !slices.Contains(allowed, v) {
			ck.bad(field, v, strings.Join(allowed, ", ")+" (empty means "+allowed[0]+")")
		}
	}
	if c.CacheMB < 1 || c.CacheMB > 65536 {
		ck.bad("stateDB.cacheMB", c.CacheMB, "1 to 65536 (0 means 128)")
	}
	if v := c.Pebble.ValueSeparation; v != 0 && v != -1 && (v < 256 || v > 1<<30) {
		ck.bad("stateDB.pebble.valueSeparation", v, "-1 (off) or 256 to 1073741824 bytes (0 means 4096)")
	}
	inRange("stateDB.pebble.memTableMB", c.Pebble.MemTableMB, 1, 4095, pebbledb.DefaultMemTableSize>>20)
	oneOf("stateDB.pebble.compression", c.Pebble.Compression, pebbledb.Compressions...)
	oneOf("stateDB.pebble.blobCompression", c.Pebble.BlobCompression, pebbledb.Compressions...)
	oneOf("stateDB.leveldb.compression", c.LevelDB.Compression, "snappy", "none")
	inRange("stateDB.leveldb.writeBufferMB", c.LevelDB.WriteBufferMB, 1, 1024, 16)
	oneOf("stateDB.badger.compression", c.Badger.Compression, "snappy", "zstd", "none")
	inRange("stateDB.badger.memTableMB", c.Badger.MemTableMB, 1, 1024, 16)
	inRange("stateDB.badger.numMemtables", c.Badger.NumMemtables, 1, 16, 2)
	inRange("stateDB.badger.indexCacheMB", c.Badger.IndexCacheMB, 1, 65536, 16)
	inRange("stateDB.bbolt.initialMmapMB", c.Bbolt.InitialMmapMB, 1, 1<<20, 64)
	oneOf("stateDB.rocksdb.compression", c.RocksDB.Compression, "lz4", "snappy", "zstd", "none")
	inRange("stateDB.rocksdb.writeBufferMB", c.RocksDB.WriteBufferMB, 1, 1024, 16)
	inRange("stateDB.checkpoint.everyBlocks", c.Checkpoint.EveryBlocks, 1, 1e9, memdb.DefaultEveryBlocks)
	if iv := c.Checkpoint.Interval; iv != 0 && (iv < 10*time.Millisecond || iv > 24*time.Hour) {
		ck.bad("stateDB.checkpoint.interval", iv, "10ms to 24h (0 means 10s)")
	}
	if c.Backend == backend.Memnode {
		if why := checkHostPort(c.Memnode.Address); why != "" {
			ck.bad("stateDB.memnode.address", c.Memnode.Address, why+" (the memory node's listen address)")
		}
		if len(c.Memnode.CAs) == 0 {
			ck.bad("stateDB.memnode.cas", "", "at least one PEM CA file that issued the memory node's TLS certificate")
		}
	}
	if v := c.Memnode.CacheMB; v != 0 && v != -1 && (v < 1 || v > 1<<20) {
		ck.bad("stateDB.memnode.cacheMB", v, "-1 (none) or 1 to 1048576 (0 means 64)")
	}
	if iv := c.Memnode.CallTimeout; iv != 0 && (iv < 100*time.Millisecond || iv > 10*time.Minute) {
		ck.bad("stateDB.memnode.callTimeout", iv, "100ms to 10m (0 means 30s)")
	}
	c.Redis.check(ck, c.Backend == backend.Redis)
	inRange("stateDB.tiered.cacheMB", c.Tiered.CacheMB, 1, 1<<20, tiered.DefaultCacheBytes>>20)
	inRange("stateDB.tiered.memoryMB", c.Tiered.MemoryMB, 1, 1<<20, tiered.DefaultMemoryBytes>>20)
	inRange("stateDB.tiered.flushBlocks", c.Tiered.FlushBlocks, 1, 1e6, tiered.DefaultFlushBlocks)
	if iv := c.Tiered.FlushInterval; iv != 0 && (iv < time.Millisecond || iv > time.Hour) {
		ck.bad("stateDB.tiered.flushInterval", iv, "1ms to 1h (0 means 1s)")
	}
}

// Options converts the section, defaults filled in, to the backends'
// options.
func (c *StateDBConfig) Options() backend.Options {
	const mb = 1 << 20
	cache := int64(c.CacheMB) * mb
	var o backend.Options
	o.Pebble.CacheSize = cache
	o.Pebble.ValueSeparation = c.Pebble.ValueSeparation
	o.Pebble.MemTableSize = uint64(c.Pebble.MemTableMB) * mb
	o.Pebble.Compression = c.Pebble.Compression
	o.Pebble.BlobCompression = c.Pebble.BlobCompression
	o.LevelDB.CacheSize = cache
	o.LevelDB.Compression = c.LevelDB.Compression
	o.LevelDB.WriteBufferSize = c.LevelDB.WriteBufferMB * mb
	o.Badger.CacheSize = cache
	o.Badger.Compression = c.Badger.Compression
	o.Badger.MemTableSize = int64(c.Badger.MemTableMB) * mb
	o.Badger.NumMemtables = c.Badger.NumMemtables
	o.Badger.IndexCacheSize = int64(c.Badger.IndexCacheMB) * mb
	o.Badger.SyncWrites = c.Badger.SyncWrites
	o.Bbolt.NoSync = c.Bbolt.NoSync
	o.Bbolt.InitialMmapSize = int64(c.Bbolt.InitialMmapMB) * mb
	o.RocksDB.CacheSize = cache
	o.RocksDB.Compression = c.RocksDB.Compression
	o.RocksDB.WriteBufferSize = c.RocksDB.WriteBufferMB * mb
	o.Checkpoint.EveryBlocks = uint64(max(0, c.Checkpoint.EveryBlocks))
	o.Checkpoint.Interval = c.Checkpoint.Interval
	o.Tiered.Storage = o.Pebble
	o.Tiered.CacheBytes = int64(c.Tiered.CacheMB) * mb
	o.Tiered.MemoryBytes = int64(c.Tiered.MemoryMB) * mb
	o.Tiered.FlushBlocks = uint64(max(0, c.Tiered.FlushBlocks))
	o.Tiered.FlushInterval = c.Tiered.FlushInterval
	o.Memnode.Address = c.Memnode.Address
	o.Memnode.CacheBytes = int64(c.Memnode.CacheMB) * mb
	if c.Memnode.CacheMB == -1 {
		o.Memnode.CacheBytes = -1
	}
	o.Memnode.CallTimeout = c.Memnode.CallTimeout
	return o
}

// openStateDB opens the node's state database in dir; for a memory
// node, the client side of mutual TLS is the node's TLS key pair.
func (n *NodeConfig) openStateDB(dir string) (statedb.DB, error) {
	o := n.StateDB.Options()
	var err error
	switch n.StateDB.Backend {
	case backend.Memnode:
		if o.Memnode.TLS, err = memnodeTLS(n.TLS, n.StateDB.Memnode.CAs, false); err != nil {
			return nil, err
		}
	case backend.Redis:
		if o.Redis, err = n.StateDB.Redis.options(); err != nil {
			return nil, err
		}
	}
	return backend.Open(n.StateDB.Backend, dir, o)
}
