package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// randomOps is the number of operations testRandom performs.
const randomOps = 2000

// model is the reference implementation: a map from (namespace, key) to
// value, and the savepoint.
type model struct {
	vals      map[statedb.Key]statedb.Value
	savepoint uint64
}

func (m *model) apply(b *statedb.Batch, height uint64) {
	for _, w := range b.Writes {
		k := statedb.Key{Namespace: w.Namespace, Key: w.Key}
		if w.Delete {
			delete(m.vals, k)
		} else {
			m.vals[k] = statedb.Value{Data: slices.Clone(w.Value), Version: w.Version}
		}
	}
	m.savepoint = height
}

func (m *model) scan(ns, start, end string) []kv {
	var out []kv
	for k, v := range m.vals {
		if k.Namespace == ns && k.Key >= start && (end == "" || k.Key < end) {
			out = append(out, kv{k.Key, v})
		}
	}
	slices.SortFunc(out, func(a, b kv) int { return strings.Compare(a.key, b.key) })
	return out
}

// randomSeed returns STRAND_CONFORMANCE_SEED if set, else a random seed.
func randomSeed(t *testing.T) uint64 {
	if s := os.Getenv("STRAND_CONFORMANCE_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("STRAND_CONFORMANCE_SEED=%q: want an unsigned decimal integer: %v", s, err)
		}
		return seed
	}
	return rand.Uint64()
}

// randGen draws namespaces, keys and values from small pools so that
// operations collide often.
type randGen struct{ r *rand.Rand }

var randNamespaces = []string{"a", "ab", "a.b", "a\x01", "b"}

func (g randGen) ns() string { return randNamespaces[g.r.IntN(len(randNamespaces))] }

func (g randGen) key() string {
	const alphabet = "\x00ab\xff"
	n := g.r.IntN(4)
	var sb strings.Builder
	for range n {
		sb.WriteByte(alphabet[g.r.IntN(len(alphabet))])
	}
	return sb.String()
}

func (g randGen) value() []byte {
	switch g.r.IntN(10) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	v := make([]byte, g.r.IntN(40))
	for i := range v {
		v[i] = byte(g.r.Uint32())
	}
	return v
}

func testRandom(t *testing.T, h *harness) {
	seed := randomSeed(t)
	t.Logf("%s: seed %d (replay with STRAND_CONFORMANCE_SEED=%d)", h.f.Name, seed, seed)
	g := randGen{rand.New(rand.NewPCG(seed, seed^0x5eed))}
	m := &model{vals: map[statedb.Key]statedb.Value{}}
	var pending statedb.Batch
	block := uint64(0)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s (seed %d): %s", h.f.Name, seed, fmt.Sprintf(format, args...))
	}
	for op := range randomOps {
		switch p := g.r.IntN(100); {
		case p < 30:
			pending.Put(g.ns(), g.key(), g.value(), statedb.Version{Block: block, Tx: uint32(len(pending.Writes))})
		case p < 40:
			pending.Delete(g.ns(), g.key(), statedb.Version{Block: block, Tx: uint32(len(pending.Writes))})
		case p < 52:
			randomCommit(g, h, m, &pending, fail, op)
			block++
		case p < 67:
			ns, key := g.ns(), g.key()
			got, ok := h.get(ns, key)
			want, wok := m.vals[statedb.Key{Namespace: ns, Key: key}]
			if !sameResult(statedb.Result{Value: got, Found: ok}, statedb.Result{Value: want, Found: wok}) {
				fail("op %d: Get(%q, %q) = %s, want %s", op, ns, key,
					showResult(statedb.Result{Value: got, Found: ok}), showResult(statedb.Result{Value: want, Found: wok}))
			}
		case p < 77:
			keys := make([]statedb.Key, g.r.IntN(10))
			for i := range keys {
				keys[i] = statedb.Key{Namespace: g.ns(), Key: g.key()}
			}
			out := make([]statedb.Result, len(keys))
			if err := h.db.GetMany(keys, out); err != nil {
				fail("op %d: GetMany: %v", op, err)
			}
			for i, k := range keys {
				want, ok := m.vals[k]
				if !sameResult(out[i], statedb.Result{Value: want, Found: ok}) {
					fail("op %d: GetMany key %v = %s, want %s", op, k, showResult(out[i]), showResult(statedb.Result{Value: want, Found: ok}))
				}
			}
			if vg, ok := h.db.(statedb.VersionGetter); ok {
				vout := make([]statedb.VersionResult, len(keys))
				if err := vg.GetVersions(keys, vout); err != nil {
					fail("op %d: GetVersions: %v", op, err)
				}
				for i, k := range keys {
					want, ok := m.vals[k]
					if vout[i].Found != ok || (ok && vout[i].Version != want.Version) {
						fail("op %d: GetVersions key %v = %+v, want found %v at %v", op, k, vout[i], ok, want.Version)
					}
				}
			}
		case p < 90:
			randomScan(g, h, m, fail, op)
		case p < 97:
			h.wantSavepoint(m.savepoint)
		default:
			if h.f.Persistent {
				h.reopen()
			}
		}
	}
	for _, ns := range randNamespaces {
		got, want := h.scan(ns, "", ""), m.scan(ns, "", "")
		if !sameScan(got, want) {
			fail("final Scan(%q): got %d keys, want %d: %s", ns, len(got), len(want), diffScan(got, want))
		}
	}
	h.wantSavepoint(m.savepoint)
}

// randomCommit applies the pending batch, sometimes making it fail on
// purpose (stale height or bad namespace) and checking nothing changed.
func randomCommit(g randGen, h *harness, m *model, pending *statedb.Batch, fail func(string, ...any), op int) {
	defer pending.Reset()
	height := m.savepoint + 1 + uint64(g.r.IntN(3))
	var wantErr error
	switch g.r.IntN(12) {
	case 0:
		height = m.savepoint - min(m.savepoint, uint64(g.r.IntN(2)))
		wantErr = statedb.ErrSavepointOrder
	case 1:
		pending.Put(badNamespaces[g.r.IntN(len(badNamespaces))], g.key(), nil, statedb.Version{})
		wantErr = statedb.ErrBadNamespace
	}
	err := h.db.Apply(pending, height, g.r.IntN(8) == 0)
	switch {
	case wantErr == nil && err != nil:
		fail("op %d: Apply(%d writes, height %d): %v", op, len(pending.Writes), height, err)
	case wantErr != nil && !errors.Is(err, wantErr):
		fail("op %d: Apply(height %d, savepoint %d): err = %v, want %v", op, height, m.savepoint, err, wantErr)
	case wantErr == nil:
		m.apply(pending, height)
	}
}

// randomScan compares a scan over a random range, stopping at a random
// count, with the model.
func randomScan(g randGen, h *harness, m *model, fail func(string, ...any), op int) {
	ns, start, end := g.ns(), g.key(), ""
	if g.r.IntN(2) == 0 {
		end = g.key()
	}
	limit := 1 + g.r.IntN(20)
	var got []kv
	err := h.db.Scan(ns, start, end, func(key string, v statedb.Value) bool {
		got = append(got, kv{key, v})
		return len(got) < limit
	})
	if err != nil {
		fail("op %d: Scan(%q, %q, %q): %v", op, ns, start, end, err)
	}
	want := m.scan(ns, start, end)
	want = want[:min(len(want), limit)]
	if !sameScan(got, want) {
		fail("op %d: Scan(%q, %q, %q) limit %d: %s", op, ns, start, end, limit, diffScan(got, want))
	}
}

func sameScan(a, b []kv) bool {
	return slices.EqualFunc(a, b, func(x, y kv) bool {
		return x.key == y.key && sameResult(statedb.Result{Value: x.val, Found: true}, statedb.Result{Value: y.val, Found: true})
	})
}

func diffScan(got, want []kv) string {
	var sb strings.Builder
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = fmt.Sprintf("%q=%q@%v", got[i].key, trim(got[i].val.Data), got[i].val.Version)
		}
		if i < len(want) {
			w = fmt.Sprintf("%q=%q@%v", want[i].key, trim(want[i].val.Data), want[i].val.Version)
		}
		if g != w {
			fmt.Fprintf(&sb, "[%d] got %s want %s; ", i, g, w)
		}
	}
	return sb.String()
}
