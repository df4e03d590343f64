package memdb

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/btree"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// degree is the B-tree degree: nodes hold up to 2*degree-1 items.
const degree = 16

// item is one key of the tree: its encoded key and its decoded value.
// data is owned by the tree and never handed out.
type item struct {
	key  string // statedb.AppendKey(ns, key)
	data []byte
	ver  statedb.Version
}

func less(a, b item) bool { return a.key < b.key }

// version is one published state: a tree that is never written again and
// the savepoint it corresponds to.
type version struct {
	tree      *btree.BTreeG[item]
	savepoint uint64
}

// DB is an in-memory statedb.DB. The zero value is not usable; call New.
type DB struct {
	// cur is the published version; nil once closed.
	cur atomic.Pointer[version]

	mu struct {
		sync.Mutex
		// work is the writer's private tree; its contents always equal
		// those of cur.tree between Apply calls.
		work *btree.BTreeG[item]
	}

	// disk writes checkpoints; nil for a DB from New.
	disk *checkpointer
}

var (
	_ statedb.DB            = (*DB)(nil)
	_ statedb.VersionGetter = (*DB)(nil)
)

// New returns an empty database with savepoint 0 that never touches the
// disk.
func New() *DB { return newDB(&version{tree: newTree()}) }

func newTree() *btree.BTreeG[item] { return btree.NewG(degree, less) }

// newDB returns a database holding v, which it publishes.
func newDB(v *version) *DB {
	d := &DB{}
	d.mu.work = v.tree
	d.cur.Store(&version{tree: d.mu.work.Clone(), savepoint: v.savepoint})
	return d
}

func dirFile(dir, name string) string { return filepath.Join(dir, name) }

func (d *DB) load() (*version, error) {
	v := d.cur.Load()
	if v == nil {
		return nil, statedb.ErrClosed
	}
	return v, nil
}

func encodeKey(ns, key string) string {
	var sb strings.Builder
	sb.Grow(len(ns) + 1 + len(key))
	sb.WriteString(ns)
	sb.WriteByte(0)
	sb.WriteString(key)
	return sb.String()
}

// Get implements statedb.DB.
func (d *DB) Get(ns, key string) (statedb.Value, bool, error) {
	v, err := d.load()
	if err != nil {
		return statedb.Value{}, false, err
	}
	if err := statedb.CheckNamespace(ns); err != nil {
		return statedb.Value{}, false, err
	}
	it, ok := v.tree.Get(item{key: encodeKey(ns, key)})
	if !ok {
		return statedb.Value{}, false, nil
	}
	return it.value(), true, nil
}

// value returns a caller-owned copy of the item's value.
func (it item) value() statedb.Value {
	return statedb.Value{Data: bytes.Clone(it.data), Version: it.ver}
}

// GetMany implements statedb.DB. All lookups read one version.
func (d *DB) GetMany(keys []statedb.Key, out []statedb.Result) error {
	return d.lookup(keys, len(out), func(i int, it item, ok bool) {
		out[i] = statedb.Result{Found: ok}
		if ok {
			out[i].Value = it.value()
		}
	})
}

// GetVersions implements statedb.VersionGetter: GetMany without copying
// values. All lookups read one version.
func (d *DB) GetVersions(keys []statedb.Key, out []statedb.VersionResult) error {
	return d.lookup(keys, len(out), func(i int, it item, ok bool) {
		out[i] = statedb.VersionResult{Version: it.ver, Found: ok}
	})
}

// lookup checks keys (against n results, and their namespaces) before
// looking any up, then hands f each key's item from one version.
func (d *DB) lookup(keys []statedb.Key, n int, f func(i int, it item, ok bool)) error {
	v, err := d.load()
	if err != nil {
		return err
	}
	if len(keys) != n {
		return fmt.Errorf("%w: %d keys, %d results", statedb.ErrLengthsMismatch, len(keys), n)
	}
	for _, k := range keys {
		if err := statedb.CheckNamespace(k.Namespace); err != nil {
			return err
		}
	}
	for i, k := range keys {
		it, ok := v.tree.Get(item{key: encodeKey(k.Namespace, k.Key)})
		f(i, it, ok)
	}
	return nil
}

// Scan implements statedb.DB. It reads one version, so fn sees a
// consistent state even if batches are applied meanwhile.
func (d *DB) Scan(ns, start, end string, fn func(key string, v statedb.Value) bool) error {
	v, err := d.load()
	if err != nil {
		return err
	}
	if err := statedb.CheckNamespace(ns); err != nil {
		return err
	}
	if end != "" && start >= end {
		return nil
	}
	lo := item{key: encodeKey(ns, start)}
	hi := item{key: ns + "\x01"} // the first key past the namespace
	if end != "" {
		hi.key = encodeKey(ns, end)
	}
	prefix := len(ns) + 1
	v.tree.AscendRange(lo, hi, func(it item) bool {
		return fn(it.key[prefix:], it.value())
	})
	return nil
}

// Apply implements statedb.DB. With a directory (Open), sync makes it
// write a checkpoint before it returns; without one (New), sync means
// nothing.
func (d *DB) Apply(b *statedb.Batch, height uint64, sync bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, err := d.load()
	if err != nil {
		return err
	}
	if height <= cur.savepoint {
		return fmt.Errorf("%w: height %d, want more than the savepoint %d", statedb.ErrSavepointOrder, height, cur.savepoint)
	}
	var writes []statedb.Write
	if b != nil {
		writes = b.Writes
	}
	if err := b.CheckNamespaces(); err != nil {
		return err
	}
	if d.disk != nil {
		if err := d.disk.err(); err != nil {
			return fmt.Errorf("memdb: refusing batches while checkpoints fail: %w", err)
		}
	}
	for _, w := range writes {
		k := encodeKey(w.Namespace, w.Key)
		if w.Delete {
			d.mu.work.Delete(item{key: k})
			continue
		}
		d.mu.work.ReplaceOrInsert(item{key: k, data: bytes.Clone(w.Value), ver: w.Version})
	}
	next := &version{tree: d.mu.work.Clone(), savepoint: height}
	if !d.cur.CompareAndSwap(cur, next) {
		// Close ran meanwhile; the work tree no longer matters.
		return statedb.ErrClosed
	}
	if d.disk == nil {
		return nil
	}
	if sync {
		return d.disk.write(next)
	}
	d.disk.applied(next)
	return nil
}

// Savepoint implements statedb.DB.
func (d *DB) Savepoint() (uint64, error) {
	v, err := d.load()
	if err != nil {
		return 0, err
	}
	return v.savepoint, nil
}

// Close implements statedb.DB. Scans already running finish on the
// version they loaded. With a directory, it stops the background
// checkpoints and writes the final state, so that a clean restart
// replays nothing.
func (d *DB) Close() error {
	last := d.cur.Swap(nil)
	if last == nil {
		return statedb.ErrClosed
	}
	if d.disk == nil {
		return nil
	}
	d.disk.close()
	return d.disk.write(last)
}
