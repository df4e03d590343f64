package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// DB is a statedb.DB on an Engine.
type DB struct {
	name string // the backend's name, prefixed to errors
	eng  Engine

	// gate lets Close wait for the calls using eng.
	gate statedb.Gate

	// savepoint mirrors the stored savepoint; written only by Apply under
	// mu, after the engine has written the batch.
	savepoint atomic.Uint64

	mu struct {
		sync.Mutex
		// batch is reused by every Apply.
		batch Batch
	}
}

var _ statedb.DB = (*DB)(nil)

// New returns a DB on eng, reading its savepoint. name labels errors
// ("leveldb: ..."). On error the caller still owns eng and closes it.
func New(name string, eng Engine) (*DB, error) {
	d := &DB{name: name, eng: eng}
	snap, err := eng.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("%s: read savepoint: %w", name, err)
	}
	defer snap.Release()
	var sp uint64
	if _, err := snap.Get(statedb.SavepointKey, func(val []byte) (err error) {
		sp, err = statedb.DecodeSavepoint(val)
		return err
	}); err != nil {
		return nil, fmt.Errorf("%s: read savepoint: %w", name, err)
	}
	d.savepoint.Store(sp)
	return d, nil
}

// Engine returns the engine, for backend-specific maintenance. It must not
// be used after Close.
func (d *DB) Engine() Engine { return d.eng }

// Apply implements statedb.DB: it writes the batch and the savepoint as
// one engine Batch.
func (d *DB) Apply(b *statedb.Batch, height uint64, sync bool) error {
	if err := d.gate.Enter(); err != nil {
		return err
	}
	defer d.gate.Exit()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := statedb.CheckHeight(height, d.savepoint.Load()); err != nil {
		return err
	}
	if err := b.CheckNamespaces(); err != nil {
		return err
	}
	eb := &d.mu.batch
	defer eb.reset()
	var writes []statedb.Write
	if b != nil {
		writes = b.Writes
	}
	for i := range writes {
		w := &writes[i]
		eb.begin(w.Delete)
		eb.buf = statedb.AppendKey(eb.buf, w.Namespace, w.Key)
		eb.mid()
		if !w.Delete {
			eb.buf = statedb.AppendValue(eb.buf, statedb.Value{Data: w.Value, Version: w.Version})
		}
		eb.end()
	}
	eb.begin(false)
	eb.buf = append(eb.buf, statedb.SavepointKey...)
	eb.mid()
	eb.buf = statedb.AppendSavepoint(eb.buf, height)
	eb.end()
	if err := d.eng.Write(eb, sync); err != nil {
		return fmt.Errorf("%s: apply %d writes at height %d: %w", d.name, len(writes), height, err)
	}
	d.savepoint.Store(height)
	return nil
}

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
	if err := d.eng.Close(); err != nil {
		return fmt.Errorf("%s: close: %w", d.name, err)
	}
	return nil
}
