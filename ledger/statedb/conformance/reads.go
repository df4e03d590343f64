package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
)

func readCases() []testCase {
	return []testCase{
		{name: "GetMany", run: testGetMany},
		{name: "GetVersions", run: testGetVersions},
		{name: "Scan", run: testScan},
		{name: "ScanEarlyStop", run: testScanEarlyStop},
		{name: "NamespaceIsolation", run: testNamespaceIsolation},
		{name: "BadNamespaceReads", run: testBadNamespaceReads},
		{name: "OwnedValues", run: testOwnedValues},
	}
}

func testGetMany(t *testing.T, h *harness) {
	var b statedb.Batch
	b.Put("a", "k1", []byte("a1"), statedb.Version{Block: 1, Tx: 1})
	b.Put("a", "k2", []byte("a2"), statedb.Version{Block: 1, Tx: 2})
	b.Put("b", "k1", []byte("b1"), statedb.Version{Block: 1, Tx: 3})
	b.Put("ab", "", nil, statedb.Version{Block: 1, Tx: 4})
	h.apply(&b, 1)

	keys := []statedb.Key{
		nk("b", "k1"), nk("a", "k2"), nk("a", "missing"), nk("a", "k1"), nk("b", "k2"),
		nk("a", "k2"), nk("ab", ""), nk("zz", "k1"), nk("a", "k1"),
	}
	want := []statedb.Result{
		{Found: true, Value: statedb.Value{Data: []byte("b1"), Version: statedb.Version{Block: 1, Tx: 3}}},
		{Found: true, Value: statedb.Value{Data: []byte("a2"), Version: statedb.Version{Block: 1, Tx: 2}}},
		{},
		{Found: true, Value: statedb.Value{Data: []byte("a1"), Version: statedb.Version{Block: 1, Tx: 1}}},
		{},
		{Found: true, Value: statedb.Value{Data: []byte("a2"), Version: statedb.Version{Block: 1, Tx: 2}}},
		{Found: true, Value: statedb.Value{Version: statedb.Version{Block: 1, Tx: 4}}},
		{},
		{Found: true, Value: statedb.Value{Data: []byte("a1"), Version: statedb.Version{Block: 1, Tx: 1}}},
	}
	out := make([]statedb.Result, len(keys))
	// Stale contents of out must be overwritten, including for misses.
	for i := range out {
		out[i] = statedb.Result{Found: true, Value: statedb.Value{Data: []byte("stale"), Version: statedb.Version{Block: 99}}}
	}
	if err := h.db.GetMany(keys, out); err != nil {
		t.Fatalf("%s: GetMany: %v", h.f.Name, err)
	}
	for i := range keys {
		if !sameResult(out[i], want[i]) {
			t.Errorf("%s: GetMany key %d %v = %s, want %s", h.f.Name, i, keys[i], showResult(out[i]), showResult(want[i]))
		}
	}
	// Duplicates must not share memory.
	if len(out[1].Value.Data) > 0 && &out[1].Value.Data[0] == &out[5].Value.Data[0] {
		t.Errorf("%s: GetMany returned the same slice for two duplicate keys", h.f.Name)
	}

	if err := h.db.GetMany(nil, nil); err != nil {
		t.Fatalf("%s: GetMany(nil, nil): %v", h.f.Name, err)
	}
	for _, n := range []int{0, len(keys) - 1, len(keys) + 1} {
		if err := h.db.GetMany(keys, make([]statedb.Result, n)); !errors.Is(err, statedb.ErrLengthsMismatch) {
			t.Fatalf("%s: GetMany(%d keys, %d results): err = %v, want ErrLengthsMismatch", h.f.Name, len(keys), n, err)
		}
	}
}

func sameResult(a, b statedb.Result) bool {
	if a.Found != b.Found {
		return false
	}
	return !a.Found || (bytes.Equal(a.Value.Data, b.Value.Data) && a.Value.Version == b.Value.Version)
}

func showResult(r statedb.Result) string {
	if !r.Found {
		return "not found"
	}
	return fmt.Sprintf("%q at %v", trim(r.Value.Data), r.Value.Version)
}

func testScan(t *testing.T, h *harness) {
	keys := []string{"a", "b", "b1", "c", "d"}
	var b statedb.Batch
	for i, k := range keys {
		b.Put("cc", k, []byte("v"+k), statedb.Version{Block: 1, Tx: uint32(i)})
	}
	b.Put("cc0", "a", []byte("x"), statedb.Version{Block: 1})
	b.Put("c", "z", []byte("x"), statedb.Version{Block: 1})
	h.apply(&b, 1)

	got := h.scan("cc", "", "")
	if len(got) != len(keys) {
		t.Fatalf("%s: Scan(cc) returned %d keys, want %d", h.f.Name, len(got), len(keys))
	}
	for i, e := range got {
		if e.key != keys[i] || string(e.val.Data) != "v"+keys[i] || e.val.Version != (statedb.Version{Block: 1, Tx: uint32(i)}) {
			t.Fatalf("%s: Scan(cc) entry %d = %q %q at %v, want %q %q at 1:%d", h.f.Name, i, e.key, e.val.Data, e.val.Version, keys[i], "v"+keys[i], i)
		}
	}
	for _, r := range []struct {
		start, end string
		want       []string
	}{
		{"b", "c", []string{"b", "b1"}},
		{"b", "", []string{"b", "b1", "c", "d"}},
		{"", "b1", []string{"a", "b"}},
		{"a0", "c0", []string{"b", "b1", "c"}},
		{"b", "b", nil},
		{"c", "b", nil},
		{"e", "", nil},
		{"", "a", nil},
		{"d", "d\x00", []string{"d"}},
	} {
		if keys := h.scanKeys("cc", r.start, r.end); !equalStrings(keys, r.want) {
			t.Errorf("%s: Scan(cc, %q, %q) = %q, want %q", h.f.Name, r.start, r.end, keys, r.want)
		}
	}
	if keys := h.scanKeys("empty", "", ""); len(keys) != 0 {
		t.Errorf("%s: Scan of a namespace never written = %q, want none", h.f.Name, keys)
	}
}

func testScanEarlyStop(t *testing.T, h *harness) {
	var b statedb.Batch
	for i := range 10 {
		b.Put("cc", fmt.Sprintf("k%02d", i), []byte("v"), statedb.Version{Block: 1})
	}
	h.apply(&b, 1)
	for _, stop := range []int{1, 3, 10} {
		var seen []string
		err := h.db.Scan("cc", "", "", func(key string, _ statedb.Value) bool {
			seen = append(seen, key)
			return len(seen) < stop
		})
		if err != nil {
			t.Fatalf("%s: Scan: %v", h.f.Name, err)
		}
		if len(seen) != stop || seen[0] != "k00" {
			t.Fatalf("%s: Scan stopping after %d keys saw %q", h.f.Name, stop, seen)
		}
	}
}

// isolationNamespaces share prefixes and so would leak into each other's
// scans under a careless encoding.
var isolationNamespaces = []string{"a", "ab", "a.b", "a\x01", "a\xff", "b", "\xff"}

func testNamespaceIsolation(t *testing.T, h *harness) {
	var b statedb.Batch
	for _, ns := range isolationNamespaces {
		for _, k := range []string{"", "\x00", "b", "b\x00k", ".b", "\xff"} {
			b.Put(ns, k, []byte(ns+"/"+k), statedb.Version{Block: 1})
		}
	}
	h.apply(&b, 1)
	for _, ns := range isolationNamespaces {
		got := h.scan(ns, "", "")
		if len(got) != 6 {
			t.Errorf("%s: Scan(%q) returned %d keys, want 6", h.f.Name, ns, len(got))
		}
		for _, e := range got {
			if string(e.val.Data) != ns+"/"+e.key {
				t.Errorf("%s: Scan(%q) leaked key %q with value %q", h.f.Name, ns, e.key, e.val.Data)
			}
		}
		for _, e := range h.scan(ns, "b", "") {
			if string(e.val.Data) != ns+"/"+e.key {
				t.Errorf("%s: Scan(%q, b, end) leaked key %q with value %q", h.f.Name, ns, e.key, e.val.Data)
			}
		}
	}
	h.wantMissing("a", "b\x00")
	h.wantMissing("a", ".b\x00b")
}

func testBadNamespaceReads(t *testing.T, h *harness) {
	h.put("a", "b\x00k", []byte("v"), statedb.Version{Block: 1}, 1)
	for _, ns := range badNamespaces {
		if _, _, err := h.db.Get(ns, "savepoint"); !errors.Is(err, statedb.ErrBadNamespace) {
			t.Errorf("%s: Get(%q): err = %v, want ErrBadNamespace", h.f.Name, ns, err)
		}
		keys := []statedb.Key{nk("a", "b\x00k"), nk(ns, "k")}
		if err := h.db.GetMany(keys, make([]statedb.Result, 2)); !errors.Is(err, statedb.ErrBadNamespace) {
			t.Errorf("%s: GetMany with namespace %q: err = %v, want ErrBadNamespace", h.f.Name, ns, err)
		}
		err := h.db.Scan(ns, "", "", func(string, statedb.Value) bool { return true })
		if !errors.Is(err, statedb.ErrBadNamespace) {
			t.Errorf("%s: Scan(%q): err = %v, want ErrBadNamespace", h.f.Name, ns, err)
		}
	}
}

func testOwnedValues(t *testing.T, h *harness) {
	var b statedb.Batch
	b.Put("cc", "k1", []byte("value-1"), statedb.Version{Block: 1})
	b.Put("cc", "k2", []byte("value-2"), statedb.Version{Block: 1})
	h.apply(&b, 1)

	v, _ := h.get("cc", "k1")
	copy(v.Data, "XXXXXXX")
	h.wantValue("cc", "k1", []byte("value-1"), statedb.Version{Block: 1})

	out := make([]statedb.Result, 2)
	if err := h.db.GetMany([]statedb.Key{nk("cc", "k1"), nk("cc", "k2")}, out); err != nil {
		t.Fatalf("%s: GetMany: %v", h.f.Name, err)
	}
	copy(out[0].Value.Data, "XXXXXXX")
	copy(out[1].Value.Data, "XXXXXXX")

	var kept []statedb.Value
	err := h.db.Scan("cc", "", "", func(_ string, v statedb.Value) bool {
		kept = append(kept, v)
		return true
	})
	if err != nil {
		t.Fatalf("%s: Scan: %v", h.f.Name, err)
	}
	if len(kept) != 2 || string(kept[0].Data) != "value-1" || string(kept[1].Data) != "value-2" {
		t.Fatalf("%s: values kept from Scan changed after it returned: %q", h.f.Name, kept)
	}
	for _, v := range kept {
		copy(v.Data, "XXXXXXX")
	}
	h.wantValue("cc", "k1", []byte("value-1"), statedb.Version{Block: 1})
	h.wantValue("cc", "k2", []byte("value-2"), statedb.Version{Block: 1})
}

// testGetVersions checks the optional statedb.VersionGetter: the versions
// GetMany would return, the same argument errors, ErrClosed after Close.
func testGetVersions(t *testing.T, h *harness) {
	vg, ok := h.db.(statedb.VersionGetter)
	if !ok {
		t.Skipf("%s does not implement statedb.VersionGetter", h.f.Name)
	}
	var b statedb.Batch
	b.Put("cc", "a", []byte("1"), statedb.Version{Block: 3, Tx: 1})
	b.Put("cc", "b", nil, statedb.Version{Block: 3, Tx: 2})
	b.Put("dd", "a", []byte("2"), statedb.Version{Block: 3, Tx: 3})
	h.apply(&b, 4)
	b.Reset()
	b.Delete("cc", "b", statedb.Version{Block: 4})
	b.Put("cc", "c", []byte("3"), statedb.Version{Block: 4, Tx: 7})
	h.apply(&b, 5)
	keys := []statedb.Key{nk("cc", "c"), nk("cc", "a"), nk("cc", "b"), nk("dd", "a"), nk("cc", "a"), nk("ee", "a"), nk("cc", "")}
	want := []statedb.VersionResult{
		{Version: statedb.Version{Block: 4, Tx: 7}, Found: true},
		{Version: statedb.Version{Block: 3, Tx: 1}, Found: true},
		{},
		{Version: statedb.Version{Block: 3, Tx: 3}, Found: true},
		{Version: statedb.Version{Block: 3, Tx: 1}, Found: true},
		{}, {},
	}
	out := make([]statedb.VersionResult, len(keys))
	for i := range out {
		out[i] = statedb.VersionResult{Version: statedb.Version{Block: 99}, Found: true} // stale: must be overwritten
	}
	if err := vg.GetVersions(keys, out); err != nil {
		t.Fatalf("%s: GetVersions: %v", h.f.Name, err)
	}
	for i := range keys {
		if out[i] != want[i] {
			t.Errorf("%s: GetVersions key %d %v = %+v, want %+v", h.f.Name, i, keys[i], out[i], want[i])
		}
	}
	if err := vg.GetVersions(nil, nil); err != nil {
		t.Fatalf("%s: GetVersions(nil, nil): %v", h.f.Name, err)
	}
	if err := vg.GetVersions(keys, out[:2]); !errors.Is(err, statedb.ErrLengthsMismatch) {
		t.Errorf("%s: GetVersions with too few results: err = %v, want ErrLengthsMismatch", h.f.Name, err)
	}
	if err := vg.GetVersions([]statedb.Key{nk("cc", "a"), nk("", "a")}, out[:2]); !errors.Is(err, statedb.ErrBadNamespace) {
		t.Errorf("%s: GetVersions with an empty namespace: err = %v, want ErrBadNamespace", h.f.Name, err)
	}
	if err := h.db.Close(); err != nil {
		t.Fatalf("%s: Close: %v", h.f.Name, err)
	}
	if err := vg.GetVersions(keys, out); !errors.Is(err, statedb.ErrClosed) {
		t.Errorf("%s: GetVersions after Close: err = %v, want ErrClosed", h.f.Name, err)
	}
}
