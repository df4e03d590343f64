package pebbledb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// savepointKey holds the savepoint. It starts with 0x00, which no encoded
// state key does (namespaces are non-empty and NUL-free).
var savepointKey = []byte("\x00savepoint")

// DB is a statedb.DB on Pebble.
type DB struct {
	db *pebble.DB

	// inflight counts calls using db; closed is set once, by Close, which
	// then waits for inflight to drain. See enter.
	inflight atomic.Int64
	closed   atomic.Bool

	// savepoint mirrors the stored savepoint; written only by Apply under
	// mu, after the batch is committed.
	savepoint atomic.Uint64

	mu struct {
		sync.Mutex
		// batch is reused by every Apply; it is empty between calls.
		batch *pebble.Batch
		// spBuf encodes the savepoint.
		spBuf [8]byte
	}
}

var _ statedb.DB = (*DB)(nil)

// Open opens or creates the database in dir.
func Open(dir string, opts Options) (*DB, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.EnsureDefaults()
	pdb, err := pebble.Open(dir, pebbleOptions(opts))
	if err != nil {
		return nil, fmt.Errorf("pebbledb: open %q: %w", dir, err)
	}
	sp, err := readSavepoint(pdb)
	if err != nil {
		_ = pdb.Close()
		return nil, fmt.Errorf("pebbledb: open %q: %w", dir, err)
	}
	d := &DB{db: pdb}
	d.savepoint.Store(sp)
	d.mu.batch = pdb.NewBatch()
	return d, nil
}

// pebbleOptions translates o, which has its defaults, to Pebble's options.
func pebbleOptions(o Options) *pebble.Options {
	po := &pebble.Options{
		CacheSize:          o.CacheSize,
		MemTableSize:       o.MemTableSize,
		MaxOpenFiles:       o.MaxOpenFiles,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietLogger{},
	}
	n := o.MaxConcurrentCompactions
	po.CompactionConcurrencyRange = func() (int, int) { return 1, n }
	if o.BloomBitsPerKey > 0 {
		po.Levels[0].FilterPolicy = bloom.FilterPolicy(o.BloomBitsPerKey)
	}
	po.EnsureDefaults() // propagates Levels[0] to the other levels
	return po
}

func readSavepoint(pdb *pebble.DB) (uint64, error) {
	val, closer, err := pdb.Get(savepointKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read savepoint: %w", err)
	}
	defer closer.Close()
	if len(val) != 8 {
		return 0, fmt.Errorf("%w: savepoint record of %d bytes, want 8", statedb.ErrCorrupt, len(val))
	}
	return binary.BigEndian.Uint64(val), nil
}

// enter registers a call that uses d.db; every successful enter must be
// paired with exit. Once Close has set closed, enter fails, and Close
// closes Pebble only after every call that entered before has exited: a
// call increments inflight before it checks closed, and Close sets closed
// before it waits for inflight to reach zero, so either the call sees
// closed or Close sees the call.
func (d *DB) enter() error {
	d.inflight.Add(1)
	if d.closed.Load() {
		d.inflight.Add(-1)
		return statedb.ErrClosed
	}
	return nil
}

func (d *DB) exit() { d.inflight.Add(-1) }

// Savepoint implements statedb.DB.
func (d *DB) Savepoint() (uint64, error) {
	if d.closed.Load() {
		return 0, statedb.ErrClosed
	}
	return d.savepoint.Load(), nil
}

// Close implements statedb.DB. It waits for running calls to return; a
// second Close returns statedb.ErrClosed.
func (d *DB) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return statedb.ErrClosed
	}
	for d.inflight.Load() > 0 {
		time.Sleep(50 * time.Microsecond)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	_ = d.mu.batch.Close()
	d.mu.batch = nil
	if err := d.db.Close(); err != nil {
		return fmt.Errorf("pebbledb: close: %w", err)
	}
	return nil
}

// Metrics returns Pebble's metrics table (levels, compactions, caches), or
// a line saying the DB is closed.
func (d *DB) Metrics() string {
	if err := d.enter(); err != nil {
		return err.Error()
	}
	defer d.exit()
	return d.db.Metrics().String()
}
