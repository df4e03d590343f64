package leveldb

import (
	"errors"
	"fmt"

	goleveldb "github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/engine"
)

// Format is the on-disk format this package writes and reads.
var Format = statedb.Format{Backend: "leveldb", Version: 1}

// Open opens or creates the database in dir. dir must hold a leveldb
// state database of this Format, or nothing (statedb.ErrFormat otherwise).
func Open(dir string, opts Options) (*engine.DB, error) {
	if err := statedb.PrepareOpen(dir, Format, &opts, nil); err != nil {
		return nil, err
	}
	ldb, err := goleveldb.OpenFile(dir, levelOptions(opts))
	if err != nil {
		return nil, fmt.Errorf("leveldb: open %q: %w", dir, err)
	}
	d, err := engine.New("leveldb", &store{db: ldb})
	if err != nil {
		_ = ldb.Close()
		return nil, err
	}
	return d, nil
}

// levelOptions translates o, which has its defaults, to goleveldb's.
func levelOptions(o Options) *opt.Options {
	lo := &opt.Options{
		BlockCacheCapacity:     int(o.CacheSize),
		WriteBuffer:            o.WriteBufferSize,
		OpenFilesCacheCapacity: o.MaxOpenFiles,
		Compression:            opt.SnappyCompression,
	}
	if o.Compression == "none" {
		lo.Compression = opt.NoCompression
	}
	if o.BloomBitsPerKey > 0 {
		lo.Filter = filter.NewBloomFilter(o.BloomBitsPerKey)
	}
	return lo
}

// store is the engine.Engine on a goleveldb database.
type store struct {
	db    *goleveldb.DB
	batch goleveldb.Batch // reused by Write, which the adapter serialises
}

func (s *store) Write(b *engine.Batch, sync bool) error {
	s.batch.Reset()
	b.Each(s.batch.Put, s.batch.Delete)
	return s.db.Write(&s.batch, &opt.WriteOptions{Sync: sync})
}

func (s *store) Snapshot() (engine.Snapshot, error) {
	snap, err := s.db.GetSnapshot()
	if err != nil {
		return nil, err
	}
	return snapshot{snap}, nil
}

func (s *store) Close() error { return s.db.Close() }

type snapshot struct{ snap *goleveldb.Snapshot }

func (s snapshot) Get(key []byte, fn func([]byte) error) (bool, error) {
	val, err := s.snap.Get(key, nil)
	if errors.Is(err, goleveldb.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, fn(val)
}

func (s snapshot) Iterate(lower, upper []byte, fn func(key, val []byte) bool) error {
	it := s.snap.NewIterator(&util.Range{Start: lower, Limit: upper}, nil)
	defer it.Release()
	for it.Next() {
		if !fn(it.Key(), it.Value()) {
			break
		}
	}
	return it.Error()
}

func (s snapshot) Release() { s.snap.Release() }
