package conformance

import (
	"bytes"
	"errors"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// Factory opens the backend under test.
type Factory struct {
	// Name labels the backend in failure messages.
	Name string
	// Open opens (creating if needed) a database in dir, an existing
	// directory. Non-persistent backends may ignore dir.
	Open func(dir string) (statedb.DB, error)
	// Persistent reports that data survives Close and Open on the same dir.
	Persistent bool
}

// testCase is one conformance subtest. It receives an open database on a
// fresh directory; the harness closes it (tolerating ErrClosed) at the end.
type testCase struct {
	name       string
	persistent bool // only run for Persistent backends
	run        func(t *testing.T, h *harness)
}

// cases lists every subtest that Run executes, in order.
func cases() []testCase {
	var all []testCase
	all = append(all, basicCases()...)
	all = append(all, batchCases()...)
	all = append(all, readCases()...)
	all = append(all, lifecycleCases()...)
	all = append(all, dumpCases()...)
	all = append(all, testCase{name: "Random", run: testRandom})
	return all
}

// Run runs every conformance subtest against the backend f opens, each
// with its own t.TempDir().
func Run(t *testing.T, f Factory) {
	t.Helper()
	if f.Open == nil {
		t.Fatalf("conformance: Factory %q has no Open function", f.Name)
	}
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			if tc.persistent && !f.Persistent {
				t.Skipf("backend %q is not persistent", f.Name)
			}
			h := newHarness(t, f)
			tc.run(t, h)
		})
	}
}

// harness holds the database under test and reopens it on demand.
type harness struct {
	t   testing.TB
	f   Factory
	dir string
	db  statedb.DB
}

func newHarness(t testing.TB, f Factory) *harness {
	h := &harness{t: t, f: f, dir: t.TempDir()}
	h.open()
	t.Cleanup(func() {
		if h.db == nil {
			return
		}
		if err := h.db.Close(); err != nil && !errors.Is(err, statedb.ErrClosed) {
			t.Errorf("%s: Close at cleanup: %v", f.Name, err)
		}
	})
	return h
}

func (h *harness) open() {
	h.t.Helper()
	db, err := h.f.Open(h.dir)
	if err != nil {
		h.t.Fatalf("%s: Open(%q): %v", h.f.Name, h.dir, err)
	}
	h.db = db
}

// reopen closes the database and opens it again on the same directory.
func (h *harness) reopen() {
	h.t.Helper()
	if err := h.db.Close(); err != nil {
		h.t.Fatalf("%s: Close before reopen: %v", h.f.Name, err)
	}
	h.db = nil
	h.open()
}

// apply applies b at height and fails the test on error.
func (h *harness) apply(b *statedb.Batch, height uint64) {
	h.t.Helper()
	if err := h.db.Apply(b, height, false); err != nil {
		h.t.Fatalf("%s: Apply(%d writes, height %d): %v", h.f.Name, len(b.Writes), height, err)
	}
}

// put applies a one-write batch at height.
func (h *harness) put(ns, key string, data []byte, v statedb.Version, height uint64) {
	h.t.Helper()
	var b statedb.Batch
	b.Put(ns, key, data, v)
	h.apply(&b, height)
}

// get returns the value of (ns, key), failing the test on error.
func (h *harness) get(ns, key string) (statedb.Value, bool) {
	h.t.Helper()
	v, ok, err := h.db.Get(ns, key)
	if err != nil {
		h.t.Fatalf("%s: Get(%q, %q): %v", h.f.Name, ns, key, err)
	}
	return v, ok
}

// wantValue checks that (ns, key) holds data at version v.
func (h *harness) wantValue(ns, key string, data []byte, v statedb.Version) {
	h.t.Helper()
	got, ok := h.get(ns, key)
	if !ok {
		h.t.Fatalf("%s: Get(%q, %q): not found, want %q at %v", h.f.Name, ns, key, data, v)
	}
	if !bytes.Equal(got.Data, data) || got.Version != v {
		h.t.Fatalf("%s: Get(%q, %q) = %q at %v, want %q at %v", h.f.Name, ns, key, trim(got.Data), got.Version, trim(data), v)
	}
}

// wantMissing checks that (ns, key) does not exist.
func (h *harness) wantMissing(ns, key string) {
	h.t.Helper()
	if got, ok := h.get(ns, key); ok {
		h.t.Fatalf("%s: Get(%q, %q) = %q at %v, want not found", h.f.Name, ns, key, trim(got.Data), got.Version)
	}
}

// wantSavepoint checks the savepoint.
func (h *harness) wantSavepoint(want uint64) {
	h.t.Helper()
	got, err := h.db.Savepoint()
	if err != nil {
		h.t.Fatalf("%s: Savepoint: %v", h.f.Name, err)
	}
	if got != want {
		h.t.Fatalf("%s: Savepoint = %d, want %d", h.f.Name, got, want)
	}
}

// kv is one key and value seen by a scan.
type kv struct {
	key string
	val statedb.Value
}

// scan returns every key of ns in [start, end).
func (h *harness) scan(ns, start, end string) []kv {
	h.t.Helper()
	var out []kv
	err := h.db.Scan(ns, start, end, func(key string, v statedb.Value) bool {
		out = append(out, kv{key, v})
		return true
	})
	if err != nil {
		h.t.Fatalf("%s: Scan(%q, %q, %q): %v", h.f.Name, ns, start, end, err)
	}
	return out
}

// scanKeys returns the keys of ns in [start, end).
func (h *harness) scanKeys(ns, start, end string) []string {
	h.t.Helper()
	var keys []string
	for _, e := range h.scan(ns, start, end) {
		keys = append(keys, e.key)
	}
	return keys
}

// trim shortens data for failure messages.
func trim(data []byte) []byte {
	if len(data) > 40 {
		return data[:40]
	}
	return data
}

// equalStrings compares two string slices, treating nil and empty alike.
func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// nk builds a statedb.Key.
func nk(ns, key string) statedb.Key { return statedb.Key{Namespace: ns, Key: key} }
