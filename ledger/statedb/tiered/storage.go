package tiered

import (
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"

	"github.com/strand-ledger/strand/internal/compactsched"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// storage is the storage tier: Pebble, in pebbledb's layout (state under
// statedb.AppendKey, values statedb.AppendValue, the savepoint under
// statedb.SavepointKey), written only by the flusher.
//
// Invariant: the stored savepoint is a height whose state the tier fully
// holds. write puts the versions of every batch up to a height and that
// height as the savepoint in ONE Pebble batch, in height order, so after
// any crash the tier holds the state of some height it was given, never
// part of one.
type storage struct {
	db *pebble.DB
}

func openStorage(dir string, po *pebble.Options) (*storage, uint64, error) {
	po.Experimental.CompactionScheduler = compactsched.New() // no timer while idle
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, 0, fmt.Errorf("tiered: open storage tier %q: %w", dir, err)
	}
	s := &storage{db: db}
	sp, err := readSavepoint(db)
	if err != nil {
		_ = db.Close()
		return nil, 0, fmt.Errorf("tiered: open storage tier %q: %w", dir, err)
	}
	return s, sp, nil
}

// reader is what the storage tier's reads need: the DB or a snapshot.
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// readSavepoint reads the stored savepoint from r; 0 if none.
func readSavepoint(r reader) (uint64, error) {
	val, closer, err := r.Get(statedb.SavepointKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read savepoint: %w", err)
	}
	defer closer.Close()
	return statedb.DecodeSavepoint(val)
}

// write makes the storage tier hold batches (in order) and height as its
// savepoint, atomically; with sync, durably before it returns.
func (s *storage) write(batches []pendingBatch, height uint64, sync bool) error {
	b := s.db.NewBatch()
	defer b.Close()
	var kbuf, vbuf []byte
	for _, pb := range batches {
		for _, w := range pb.writes {
			kbuf = statedb.AppendKey(kbuf[:0], w.Namespace, w.Key)
			var err error
			if w.Delete {
				err = b.Delete(kbuf, nil)
			} else {
				vbuf = statedb.AppendValue(vbuf[:0], statedb.Value{Data: w.Value, Version: w.Version})
				err = b.Set(kbuf, vbuf, nil)
			}
			if err != nil {
				return fmt.Errorf("tiered: storage batch of height %d: %w", pb.height, err)
			}
		}
	}
	if err := b.Set(statedb.SavepointKey, statedb.AppendSavepoint(nil, height), nil); err != nil {
		return fmt.Errorf("tiered: storage savepoint %d: %w", height, err)
	}
	opts := pebble.NoSync
	if sync {
		opts = pebble.Sync
	}
	if err := b.Commit(opts); err != nil {
		return fmt.Errorf("tiered: write blocks up to height %d to the storage tier: %w", height, err)
	}
	return nil
}

// snapshot returns a point-in-time view of the tier; the caller closes it.
func (s *storage) snapshot() *pebble.Snapshot { return s.db.NewSnapshot() }

// get reads an encoded key from r.
func get(r reader, key []byte) (statedb.Value, bool, error) {
	val, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return statedb.Value{}, false, nil
	}
	if err != nil {
		return statedb.Value{}, false, fmt.Errorf("tiered: storage read: %w", err)
	}
	defer closer.Close()
	v, err := statedb.DecodeValue(val)
	if err != nil {
		return statedb.Value{}, false, fmt.Errorf("tiered: storage value of key %q: %w", key, err)
	}
	return v, true, nil
}

func (s *storage) close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("tiered: close storage tier: %w", err)
	}
	return nil
}
