package backend

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/badger"
	"github.com/strand-ledger/strand/ledger/statedb/bbolt"
	"github.com/strand-ledger/strand/ledger/statedb/leveldb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
	"github.com/strand-ledger/strand/ledger/statedb/redisdb"
	"github.com/strand-ledger/strand/ledger/statedb/rocksdb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode"
)

// Options holds the options of every backend; Open uses those of the
// backend it opens. The zero value means every default.
type Options struct {
	Pebble  pebbledb.Options
	LevelDB leveldb.Options
	Badger  badger.Options
	Bbolt   bbolt.Options
	RocksDB rocksdb.Options // used only in binaries built with -tags rocksdb
	// Checkpoint tunes memory-checkpoint (memdb.Open).
	Checkpoint memdb.Options
	// Tiered tunes tiered (cache, memory tier, Pebble storage tier).
	Tiered tiered.Options
	// Memnode reaches the memory node (address, mutual TLS, local cache);
	// the state lives there, not in dir.
	Memnode memnode.ClientOptions
	// Redis reaches the Redis server (address, auth, TLS, key prefix);
	// the state lives there, dir holds only the format claim.
	Redis redisdb.Options
}

// Default is the backend used when none is named.
const Default = "pebble"

// opener opens one backend in dir.
type opener func(dir string, o *Options) (statedb.DB, error)

// openers maps a backend name to its opener. rocksdb adds itself when
// built with the rocksdb tag.
var openers = map[string]opener{
	"pebble":   func(dir string, o *Options) (statedb.DB, error) { return pebbledb.Open(dir, o.Pebble) },
	"leveldb":  func(dir string, o *Options) (statedb.DB, error) { return leveldb.Open(dir, o.LevelDB) },
	"badger":   func(dir string, o *Options) (statedb.DB, error) { return badger.Open(dir, o.Badger) },
	"bbolt":    func(dir string, o *Options) (statedb.DB, error) { return bbolt.Open(dir, o.Bbolt) },
	"memory":   func(string, *Options) (statedb.DB, error) { return memdb.New(), nil },
	Checkpoint: func(dir string, o *Options) (statedb.DB, error) { return memdb.Open(dir, o.Checkpoint) },
	"tiered":   func(dir string, o *Options) (statedb.DB, error) { return tiered.Open(dir, o.Tiered) },
	Memnode:    func(_ string, o *Options) (statedb.DB, error) { return memnode.Dial(o.Memnode) },
	Redis:      func(dir string, o *Options) (statedb.DB, error) { return redisdb.Open(dir, o.Redis) },
}

// Redis names the backend whose state lives on a Redis server, fenced
// against a server that lost it (redisdb).
const Redis = "redis"

// Memnode names the backend whose state lives on a memory node (strand
// memnode), reached over the network: a local cache in front of it.
const Memnode = "memnode"

// Checkpoint names the in-memory backend that checkpoints to disk
// (memdb.Open); "memory" (memdb.New) keeps nothing.
const Checkpoint = "memory-checkpoint"

// order is the order Names lists backends in.
var order = []string{"pebble", "leveldb", "badger", "bbolt", "rocksdb", "tiered", Memnode, Redis, Checkpoint, "memory"}

// Errors of Check and Open; test with errors.Is.
var (
	ErrUnknown  = errors.New("statedb backend: unknown")
	ErrNotBuilt = errors.New("statedb backend: not built into this binary")
)

// Names returns the backends this binary can open, default first.
func Names() []string {
	var names []string
	for _, n := range order {
		if _, ok := openers[n]; ok {
			names = append(names, n)
		}
	}
	return names
}

// Persistent reports whether the named backend keeps its state on disk
// (memory-checkpoint does, as of its newest checkpoint; tiered as of its
// storage tier's savepoint; memnode on the memory node's disk, as of
// its storage tier's savepoint; redis on the server, as long as the
// server keeps it).
func Persistent(name string) bool { return name != "memory" }

// Check reports whether Open accepts name: ErrUnknown for a name no
// backend has, ErrNotBuilt for rocksdb in a binary built without it. The
// error lists the allowed names.
func Check(name string) error {
	if _, ok := openers[name]; ok {
		return nil
	}
	allowed := strings.Join(Names(), ", ")
	if slices.Contains(order, name) {
		return fmt.Errorf("%w: %q: this binary was built without it; rebuild with `go build -tags %s` (needs librocksdb-dev), or use one of %s",
			ErrNotBuilt, name, name, allowed)
	}
	return fmt.Errorf("%w: %q, want one of %s", ErrUnknown, name, allowed)
}

// Open opens (creating if needed) the named backend's database in dir;
// the memory backend ignores dir, memory-checkpoint writes its
// checkpoints there.
func Open(name, dir string, opts Options) (statedb.DB, error) {
	if err := Check(name); err != nil {
		return nil, err
	}
	return openers[name](dir, &opts)
}
