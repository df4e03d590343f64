package pebbledb

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"

	"github.com/strand-ledger/strand/internal/compactsched"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// DB is a statedb.DB on Pebble.
type DB struct {
	db *pebble.DB

	// gate lets Close wait for the calls using db.
	gate statedb.Gate

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

// Format is the on-disk format this package writes and reads.
var Format = statedb.Format{Backend: "pebble", Version: 1}

// Open opens or creates the database in dir. dir must hold a pebbledb
// database of this Format, or nothing (statedb.ErrFormat otherwise).
func Open(dir string, opts Options) (*DB, error) {
	if err := statedb.PrepareOpen(dir, Format, &opts, wroteByPebble); err != nil {
		return nil, err
	}
	po := PebbleOptions(opts)
	po.Experimental.CompactionScheduler = compactsched.New() // no timer while idle
	pdb, err := pebble.Open(dir, po)
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

// wroteByPebble recognises a directory that Pebble wrote before format
// markers existed by the format-version marker only Pebble writes.
func wroteByPebble(names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "marker.format-version.") })
}

// PebbleOptions translates o, which has its defaults (EnsureDefaults),
// to Pebble's options; the tiered backend opens its storage tier with it.
func PebbleOptions(o Options) *pebble.Options {
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
	if o.ValueSeparation > 0 {
		po.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
			return pebble.ValueSeparationPolicy{Enabled: true, MinimumSize: o.ValueSeparation,
				MaxBlobReferenceDepth: 10, RewriteMinimumAge: 5 * time.Minute, TargetGarbageRatio: 0.2}
		}
	}
	// Pebble writes a blob file with the ValueBlocks setting of its
	// level's profile; tables use the other two.
	profile := *compressions[o.Compression]
	profile.Name = o.Compression + "+blob-" + o.BlobCompression
	profile.ValueBlocks = compressions[o.BlobCompression].ValueBlocks
	po.Levels[0].Compression = func() *sstable.CompressionProfile { return &profile }
	po.EnsureDefaults() // propagates Levels[0] to the other levels
	return po
}

func readSavepoint(pdb *pebble.DB) (uint64, error) {
	val, closer, err := pdb.Get(statedb.SavepointKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read savepoint: %w", err)
	}
	defer closer.Close()
	return statedb.DecodeSavepoint(val)
}

func (d *DB) enter() error { return d.gate.Enter() }

func (d *DB) exit() { d.gate.Exit() }

// Savepoint implements statedb.DB.
func (d *DB) Savepoint() (uint64, error) {
	if d.gate.Closed() {
		return 0, statedb.ErrClosed
	}
	return d.savepoint.Load(), nil
}

// Close implements statedb.DB. It waits for running calls to return; a
// second Close returns statedb.ErrClosed.
func (d *DB) Close() error {
	if err := d.gate.Shut(); err != nil {
		return err
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
