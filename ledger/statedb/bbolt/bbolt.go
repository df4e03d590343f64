package bbolt

import (
	"bytes"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/engine"
)

// Format is the on-disk format this package writes and reads.
var Format = statedb.Format{Backend: "bbolt", Version: 1}

// FileName is the database file in the directory.
const FileName = "state.bolt"

// bucket holds every state key and the savepoint.
var bucket = []byte("state")

// Open opens or creates the database in dir. dir must hold a bbolt state
// database of this Format, or nothing (statedb.ErrFormat otherwise).
func Open(dir string, opts Options) (*engine.DB, error) {
	if err := statedb.PrepareOpen(dir, Format, &opts, nil); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, FileName)
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{
		// A second process on the same file fails instead of waiting.
		Timeout:         time.Second,
		InitialMmapSize: int(opts.InitialMmapSize),
		// The map freelist is faster than the array one on large files.
		FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("bbolt: open %q (a timeout means another process has it open): %w", path, err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	})
	if err != nil {
		_ = bdb.Close()
		return nil, fmt.Errorf("bbolt: open %q: create bucket: %w", path, err)
	}
	d, err := engine.New("bbolt", &store{db: bdb, noSync: opts.NoSync})
	if err != nil {
		_ = bdb.Close()
		return nil, err
	}
	return d, nil
}

// store is the engine.Engine on a bbolt database.
type store struct {
	db     *bolt.DB
	noSync bool
}

// Write commits b in one transaction. bbolt reads DB.NoSync at commit;
// Write sets it per call, which is safe because the adapter serialises
// Write calls and nothing else commits.
func (s *store) Write(b *engine.Batch, sync bool) error {
	s.db.NoSync = s.noSync && !sync
	tx, err := s.db.Begin(true)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	bk := tx.Bucket(bucket)
	for i := range b.Len() {
		key, val, del := b.Op(i)
		if del {
			err = bk.Delete(key)
		} else {
			err = bk.Put(key, val)
		}
		if err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
	}
	return tx.Commit()
}

func (s *store) Snapshot() (engine.Snapshot, error) {
	tx, err := s.db.Begin(false)
	if err != nil {
		return nil, err
	}
	return snapshot{tx: tx, bk: tx.Bucket(bucket)}, nil
}

func (s *store) Close() error { return s.db.Close() }

type snapshot struct {
	tx *bolt.Tx
	bk *bolt.Bucket
}

func (s snapshot) Get(key []byte, fn func([]byte) error) (bool, error) {
	val := s.bk.Get(key)
	if val == nil {
		return false, nil
	}
	return true, fn(val)
}

func (s snapshot) Iterate(lower, upper []byte, fn func(key, val []byte) bool) error {
	c := s.bk.Cursor()
	for k, v := c.Seek(lower); k != nil && bytes.Compare(k, upper) < 0; k, v = c.Next() {
		if !fn(k, v) {
			break
		}
	}
	return nil
}

func (s snapshot) Release() { _ = s.tx.Rollback() }
