package badger

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	bdg "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/engine"
)

// Format is the on-disk format this package writes and reads.
var Format = statedb.Format{Backend: "badger", Version: 1}

// ErrBatchTooBig marks a batch over Badger's transaction limit; test with
// errors.Is.
var ErrBatchTooBig = fmt.Errorf("badger: %w", statedb.ErrBatchTooBig)

// Open opens or creates the database in dir. dir must hold a badger
// state database of this Format, or nothing (statedb.ErrFormat otherwise).
func Open(dir string, opts Options) (*engine.DB, error) {
	if err := statedb.PrepareOpen(dir, Format, &opts, nil); err != nil {
		return nil, err
	}
	if err := removeEmptyMemtables(dir); err != nil {
		return nil, err
	}
	bdb, err := bdg.Open(badgerOptions(dir, opts))
	if err != nil {
		return nil, fmt.Errorf("badger: open %q: %w", dir, err)
	}
	st := &store{db: bdb, opts: opts, stop: make(chan struct{}), done: make(chan struct{})}
	go st.gcValueLog(valueLogGCInterval)
	d, err := engine.New("badger", st)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return d, nil
}

// removeEmptyMemtables deletes the memtable files (NNNNN.mem, Badger's
// write-ahead logs) of dir that are empty. Badger creates such a file,
// then sizes it and writes its header; a crash in between leaves it
// empty, and Badger then refuses to open the database ("while opening
// fid: N err: Create a new file"), although the file holds nothing. The
// metamorphic test's crashes caught one.
func removeEmptyMemtables(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("badger: %w", err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".mem") || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return fmt.Errorf("badger: %w", err)
		}
		if info.Size() == 0 {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("badger: removing the empty memtable file %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

// badgerOptions translates o, which has its defaults, to Badger's.
func badgerOptions(dir string, o Options) bdg.Options {
	bo := bdg.DefaultOptions(dir).
		WithLogger(quietLogger{}).
		WithMetricsEnabled(false).
		WithBlockCacheSize(o.CacheSize).
		WithIndexCacheSize(o.IndexCacheSize).
		WithMemTableSize(o.MemTableSize).
		WithNumMemtables(o.NumMemtables).
		WithSyncWrites(o.SyncWrites).
		// Two compactors, Badger's minimum: a peer's CPUs belong to
		// validation first.
		WithNumCompactors(2).
		// Key-value separation (Badger's design): a value of at least
		// ValueThreshold goes to the value log and the LSM tree keeps a
		// 12-byte pointer. Small values stay in the tree, so point reads
		// of them need one lookup; large ones no longer fill memtables
		// (less memory, fewer flushes and compactions) and count as their
		// pointer towards Badger's transaction limit, so a batch of large
		// values fits one transaction. gcValueLog reclaims overwritten
		// values.
		WithValueThreshold(ValueThreshold).
		// The value log is written through a memory map of twice this
		// size: smaller files keep the mapping small and let the value
		// log GC rewrite one file at a time cheaply.
		WithValueLogFileSize(ValueLogFileSize).
		// Apply calls are serialised by the adapter: no conflict tracking.
		WithDetectConflicts(false)
	switch o.Compression {
	case "none":
		bo = bo.WithCompression(options.None)
	case "zstd":
		bo = bo.WithCompression(options.ZSTD)
	default:
		bo = bo.WithCompression(options.Snappy)
	}
	return bo
}

// store is the engine.Engine on a Badger database.
type store struct {
	db   *bdg.DB
	opts Options
	stop chan struct{} // closed by Close: ends gcValueLog
	done chan struct{} // closed when gcValueLog has returned
}

func (s *store) Write(b *engine.Batch, sync bool) error {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	for i := range b.Len() {
		key, val, del := b.Op(i)
		var err error
		if del {
			err = txn.Delete(key)
		} else {
			err = txn.Set(key, val)
		}
		if errors.Is(err, bdg.ErrTxnTooBig) {
			return fmt.Errorf("%w: %d operations, %d bytes; Badger takes at most 15%% of MemTableSize (%d bytes) per batch: raise MemTableSize",
				ErrBatchTooBig, b.Len(), b.Size(), s.opts.MemTableSize)
		}
		if err != nil {
			return err
		}
	}
	if err := txn.Commit(); err != nil {
		return err
	}
	if sync && !s.opts.SyncWrites {
		return s.db.Sync()
	}
	return nil
}

func (s *store) Snapshot() (engine.Snapshot, error) {
	return snapshot{s.db.NewTransaction(false)}, nil
}

func (s *store) Close() error {
	close(s.stop)
	<-s.done
	return s.db.Close()
}

// gcValueLog runs Badger's value log GC every interval until Close:
// each run rewrites value log files of which at least half is
// overwritten or deleted values, until none is left.
func (s *store) gcValueLog(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		for s.db.RunValueLogGC(0.5) == nil {
			select {
			case <-s.stop:
				return
			default:
			}
		}
	}
}

type snapshot struct{ txn *bdg.Txn }

func (s snapshot) Get(key []byte, fn func([]byte) error) (bool, error) {
	item, err := s.txn.Get(key)
	if errors.Is(err, bdg.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, item.Value(fn)
}

func (s snapshot) Iterate(lower, upper []byte, fn func(key, val []byte) bool) error {
	io := bdg.DefaultIteratorOptions
	io.PrefetchValues = false // values are read once, in order
	it := s.txn.NewIterator(io)
	defer it.Close()
	for it.Seek(lower); it.Valid(); it.Next() {
		item := it.Item()
		key := item.Key()
		if bytes.Compare(key, upper) >= 0 {
			break
		}
		more := true
		if err := item.Value(func(val []byte) error { more = fn(key, val); return nil }); err != nil {
			return err
		}
		if !more {
			break
		}
	}
	return nil
}

func (s snapshot) Release() { s.txn.Discard() }

// quietLogger drops Badger's informational messages (every Open and
// compaction) and passes warnings and errors to the standard logger.
type quietLogger struct{}

func (quietLogger) Errorf(format string, args ...any) { log.Printf("badger: "+format, args...) }
func (quietLogger) Warningf(format string, args ...any) {
	log.Printf("badger: warning: "+format, args...)
}
func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Debugf(string, ...any) {}
