package pebbledb

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// Apply implements statedb.DB: it writes the batch and the savepoint in
// one pebble.Batch, synced to disk when sync is set. Keys and values are
// encoded straight into the batch's buffer, which is reused across calls.
func (d *DB) Apply(b *statedb.Batch, height uint64, sync bool) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := statedb.CheckHeight(height, d.savepoint.Load()); err != nil {
		return err
	}
	var writes []statedb.Write
	if b != nil {
		writes = b.Writes
	}
	if err := b.CheckNamespaces(); err != nil {
		return err
	}
	pb := d.mu.batch
	defer pb.Reset()
	for i := range writes {
		if err := encodeWrite(pb, &writes[i]); err != nil {
			return err
		}
	}
	sp := statedb.AppendSavepoint(d.mu.spBuf[:0], height)
	if err := pb.Set(statedb.SavepointKey, sp, nil); err != nil {
		return fmt.Errorf("pebbledb: batch savepoint %d: %w", height, err)
	}
	wo := pebble.NoSync
	if sync {
		wo = pebble.Sync
	}
	if err := d.db.Apply(pb, wo); err != nil {
		return fmt.Errorf("pebbledb: apply %d writes at height %d: %w", len(writes), height, err)
	}
	d.savepoint.Store(height)
	return nil
}

// encodeWrite appends w to pb, encoding into the batch's own buffer.
func encodeWrite(pb *pebble.Batch, w *statedb.Write) error {
	keyLen := len(w.Namespace) + 1 + len(w.Key)
	if w.Delete {
		op := pb.DeleteDeferred(keyLen)
		statedb.AppendKey(op.Key[:0], w.Namespace, w.Key)
		return op.Finish()
	}
	op := pb.SetDeferred(keyLen, statedb.VersionSize+len(w.Value))
	statedb.AppendKey(op.Key[:0], w.Namespace, w.Key)
	statedb.AppendValue(op.Value[:0], statedb.Value{Data: w.Value, Version: w.Version})
	return op.Finish()
}
