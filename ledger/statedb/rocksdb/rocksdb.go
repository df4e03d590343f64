//go:build rocksdb

package rocksdb

import (
	"fmt"

	"github.com/linxGnu/grocksdb"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/engine"
)

// Open opens or creates the database in dir. dir must hold a rocksdb
// state database of this Format, or nothing (statedb.ErrFormat otherwise).
func Open(dir string, opts Options) (*engine.DB, error) {
	if err := statedb.PrepareOpen(dir, Format, &opts, nil); err != nil {
		return nil, err
	}
	s := &store{cache: grocksdb.NewLRUCache(uint64(opts.CacheSize))}
	s.opts = rocksOptions(opts, s.cache)
	rdb, err := grocksdb.OpenDb(s.opts, dir)
	if err != nil {
		s.free()
		return nil, fmt.Errorf("rocksdb: open %q: %w", dir, err)
	}
	s.db = rdb
	s.batch = grocksdb.NewWriteBatch()
	s.wo = grocksdb.NewDefaultWriteOptions()
	d, err := engine.New("rocksdb", s)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	return d, nil
}

// rocksOptions translates o, which has its defaults, to RocksDB's.
func rocksOptions(o Options, cache *grocksdb.Cache) *grocksdb.Options {
	bbto := grocksdb.NewDefaultBlockBasedTableOptions()
	bbto.SetBlockCache(cache)
	bbto.SetFilterPolicy(grocksdb.NewBloomFilter(10))
	ro := grocksdb.NewDefaultOptions()
	ro.SetCreateIfMissing(true)
	ro.SetBlockBasedTableFactory(bbto)
	ro.SetWriteBufferSize(uint64(o.WriteBufferSize))
	// Two background jobs: a peer's CPUs belong to validation first.
	ro.SetMaxBackgroundJobs(2)
	switch o.Compression {
	case "none":
		ro.SetCompression(grocksdb.NoCompression)
	case "snappy":
		ro.SetCompression(grocksdb.SnappyCompression)
	case "zstd":
		ro.SetCompression(grocksdb.ZSTDCompression)
	default:
		ro.SetCompression(grocksdb.LZ4Compression)
	}
	return ro
}

// store is the engine.Engine on a RocksDB database. batch and wo are used
// only by Write, which the adapter serialises.
type store struct {
	db    *grocksdb.DB
	opts  *grocksdb.Options
	cache *grocksdb.Cache
	batch *grocksdb.WriteBatch
	wo    *grocksdb.WriteOptions
}

func (s *store) Write(b *engine.Batch, sync bool) error {
	s.batch.Clear()
	b.Each(s.batch.Put, s.batch.Delete)
	s.wo.SetSync(sync)
	return s.db.Write(s.wo, s.batch)
}

func (s *store) Snapshot() (engine.Snapshot, error) {
	snap := s.db.NewSnapshot()
	ro := grocksdb.NewDefaultReadOptions()
	ro.SetSnapshot(snap)
	return &snapshot{db: s.db, snap: snap, ro: ro}, nil
}

func (s *store) Close() error {
	s.db.Close()
	s.free()
	return nil
}

// free releases the C objects other than the database.
func (s *store) free() {
	if s.batch != nil {
		s.batch.Destroy()
	}
	if s.wo != nil {
		s.wo.Destroy()
	}
	s.opts.Destroy()
	s.cache.Destroy()
}

type snapshot struct {
	db   *grocksdb.DB
	snap *grocksdb.Snapshot
	ro   *grocksdb.ReadOptions
}

func (s *snapshot) Get(key []byte, fn func([]byte) error) (bool, error) {
	v, err := s.db.GetPinned(s.ro, key)
	if err != nil {
		return false, err
	}
	defer v.Destroy()
	if !v.Exists() {
		return false, nil
	}
	return true, fn(v.Data())
}

func (s *snapshot) Iterate(lower, upper []byte, fn func(key, val []byte) bool) error {
	ro := grocksdb.NewDefaultReadOptions()
	defer ro.Destroy()
	ro.SetSnapshot(s.snap)
	ro.SetIterateUpperBound(upper)
	it := s.db.NewIterator(ro)
	defer it.Close()
	for it.Seek(lower); it.Valid(); it.Next() {
		if !fn(it.Key().Data(), it.Value().Data()) {
			break
		}
	}
	return it.Err()
}

func (s *snapshot) Release() {
	s.ro.Destroy()
	s.db.ReleaseSnapshot(s.snap)
}
