package tiered

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
)

// DB is the tiered statedb.DB: local cache, memory tier, storage tier.
type DB struct {
	opts    Options
	gate    statedb.Gate
	storage *storage
	cache   *Cache // nil with Options.NoCache
	// mem is the memory tier; replaced only by the simulated loss of
	// tests, while no call runs.
	mem     memoryTier
	flusher *flusher

	// viewMu makes a reader's view atomic: the reader takes its memory
	// view, its storage snapshot and its cache lookups under its read
	// lock, and Apply (publish and cache update) and the flusher's Settle
	// (which drops versions) run under its write lock, so a view is one
	// height of the state. Nothing is read or written under it but
	// memory: no I/O, no callback.
	viewMu sync.RWMutex

	// applyMu serialises Apply.
	applyMu sync.Mutex

	// Reads served by each tier.
	cacheHits, memoryHits, storageReads atomic.Uint64
}

var (
	_ statedb.DB            = (*DB)(nil)
	_ statedb.Dumper        = (*DB)(nil)
	_ statedb.VersionGetter = (*DB)(nil)
)

// Format is the on-disk format this package writes and reads: the
// storage tier in pebbledb's layout, claimed under its own name so that
// no other backend opens it.
var Format = statedb.Format{Backend: "tiered", Version: 1}

// Open opens or creates the database in dir. The memory tier starts
// empty at the storage tier's savepoint, so Savepoint reports it, and the
// caller re-applies the blocks above it from the block store.
func Open(dir string, opts Options) (*DB, error) {
	if err := statedb.PrepareOpen(dir, Format, &opts, nil); err != nil {
		return nil, err
	}
	st, sp, err := openStorage(dir, pebbledb.PebbleOptions(opts.Storage))
	if err != nil {
		return nil, err
	}
	d := &DB{opts: opts, storage: st, mem: newLocalTier(sp)}
	if !opts.NoCache {
		d.cache = NewCache(opts.CacheBytes, sp)
	}
	d.flusher = newFlusher(d, d.policy(), sp, time.Now())
	return d, nil
}

func (d *DB) policy() flushPolicy {
	return flushPolicy{blocks: d.opts.FlushBlocks, interval: d.opts.FlushInterval}
}

// Apply implements statedb.DB. It publishes the batch in the memory tier
// and the cache; the flusher writes it to storage later. It waits only
// when the memory tier has no room for the batch (until the flusher has
// made some) and, with sync, until storage holds the batch durably.
func (d *DB) Apply(b *statedb.Batch, height uint64, sync bool) error {
	if err := d.gate.Enter(); err != nil {
		return err
	}
	defer d.gate.Exit()
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	if err := statedb.CheckHeight(height, d.mem.View().Height()); err != nil {
		return err
	}
	if err := b.CheckNamespaces(); err != nil {
		return err
	}
	var writes []statedb.Write
	if b != nil {
		writes = b.Writes
	}
	if err := d.flusher.room(batchBytes(writes)); err != nil {
		return err
	}
	d.viewMu.Lock()
	d.mem.Apply(writes, height)
	d.cache.Apply(writes, height)
	d.viewMu.Unlock()
	if sync {
		return d.flusher.syncedAt(height)
	}
	// Wake the flusher when its policy would act, so that it flushes and
	// evicts in the background before an Apply has to wait for room.
	high := int64(float64(d.opts.MemoryBytes) * highWater)
	if height-d.flusher.durable() >= d.opts.FlushBlocks || d.mem.View().Bytes() > high {
		d.flusher.poke()
	}
	return nil
}

// batchBytes is what writes will cost the memory tier at most.
func batchBytes(writes []statedb.Write) int64 {
	var n int64
	for _, w := range writes {
		n += int64(len(w.Namespace)+1+len(w.Key)+len(w.Value)) + entryOverhead
	}
	return n
}

// Savepoint implements statedb.DB: the height the memory tier has
// published, which may be above the storage tier's.
func (d *DB) Savepoint() (uint64, error) {
	if d.gate.Closed() {
		return 0, statedb.ErrClosed
	}
	return d.mem.View().Height(), nil
}

// Close implements statedb.DB. It waits for running calls, flushes
// everything pending to storage with sync, so that a clean restart
// re-applies nothing, and closes storage.
func (d *DB) Close() error {
	if err := d.gate.Shut(); err != nil {
		return err
	}
	ferr := d.flusher.halt(true)
	if err := d.storage.close(); err != nil && ferr == nil {
		ferr = err
	}
	return ferr
}

// CloseLosingMemory closes the DB without flushing the memory tier,
// leaving what a killed process leaves: storage at its savepoint, the
// blocks above it lost. A memory node's tests use it to lose the tier in
// process.
func (d *DB) CloseLosingMemory() error {
	if err := d.gate.Shut(); err != nil {
		return err
	}
	ferr := d.flusher.halt(false)
	if err := d.storage.close(); err != nil && ferr == nil {
		ferr = err
	}
	return ferr
}

// Sync returns once the storage tier holds height durably (written with
// sync). height must be one the DB has published. A memory node uses it
// to acknowledge a re-sent synced batch only once it is durable.
func (d *DB) Sync(height uint64) error {
	if err := d.gate.Enter(); err != nil {
		return err
	}
	defer d.gate.Exit()
	if h := d.mem.View().Height(); height > h {
		return fmt.Errorf("tiered: sync to height %d, above the published height %d", height, h)
	}
	return d.flusher.syncedAt(height)
}

// Durable returns the storage tier's savepoint: the height a loss of the
// memory tier falls back to.
func (d *DB) Durable() uint64 { return d.flusher.durable() }

// Metrics is a snapshot of a DB's counters.
type Metrics struct {
	// Reads by the tier that answered them: cache (the local cache),
	// memory (the memory tier), storage (fell through to Pebble).
	CacheHits    uint64 `metric:"counter,family=reads,tier=cache"`
	MemoryHits   uint64 `metric:"counter,family=reads,tier=memory"`  // reads the memory tier answered
	StorageReads uint64 `metric:"counter,family=reads,tier=storage"` // reads that fell through to the storage tier
	CacheBytes   int64  `metric:"gauge"`                             // Bytes held by the local cache.
	MemoryBytes  int64  `metric:"gauge"`                             // Bytes held by the memory tier.
	MemoryBound  int64  `metric:"gauge"`                             // The memory tier's byte limit.
	Height       uint64 `metric:"gauge"`                             // The savepoint: blocks applied.
	Durable      uint64 `metric:"gauge"`                             // The storage tier's savepoint: blocks durable in Pebble.
	Flushes      uint64 `metric:"counter"`                           // Writes of pending blocks to the storage tier.
	Evicted      uint64 `metric:"counter"`                           // Versions evicted from the memory tier.
	Stalls       uint64 `metric:"counter"`                           // Applies that waited for room in the memory tier.
}

// String formats m on a few lines.
func (m Metrics) String() string {
	return fmt.Sprintf("reads: cache %d, memory %d, storage %d\n"+
		"memory tier: %d of %d bytes, %d versions evicted, %d stalls\n"+
		"cache: %d bytes\nheight %d, storage savepoint %d after %d flushes\n",
		m.CacheHits, m.MemoryHits, m.StorageReads,
		m.MemoryBytes, m.MemoryBound, m.Evicted, m.Stalls,
		m.CacheBytes, m.Height, m.Durable, m.Flushes)
}

// Metrics returns the DB's counters.
func (d *DB) Metrics() Metrics {
	f := d.flusher
	f.mu.Lock()
	m := Metrics{Durable: f.mu.durable, Flushes: f.flushes, Evicted: f.evicted, Stalls: f.stalls}
	f.mu.Unlock()
	view := d.mem.View()
	m.Height, m.MemoryBytes, m.MemoryBound = view.Height(), view.Bytes(), d.opts.MemoryBytes
	m.CacheBytes = d.cache.Size()
	m.CacheHits, m.MemoryHits, m.StorageReads = d.cacheHits.Load(), d.memoryHits.Load(), d.storageReads.Load()
	return m
}
