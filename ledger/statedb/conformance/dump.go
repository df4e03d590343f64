package conformance

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
)

func dumpCases() []testCase {
	return []testCase{{name: "Dump", run: testDump}}
}

// testDump checks that the backend is a statedb.Dumper and that Dump
// visits every key of every namespace in encoded-key order, with versions,
// deletes applied and the savepoint, and stops on fn's error.
func testDump(t *testing.T, h *harness) {
	d, ok := h.db.(statedb.Dumper)
	if !ok {
		t.Fatalf("%s: %T does not implement statedb.Dumper", h.f.Name, h.db)
	}
	if sp, err := d.Dump(func(ns, key string, v statedb.Value) error {
		return fmt.Errorf("empty database dumped %q %q", ns, key)
	}); err != nil || sp != 0 {
		t.Fatalf("%s: Dump of an empty database = savepoint %d, %v", h.f.Name, sp, err)
	}
	longNS := strings.Repeat("\xff", statedb.MaxNamespaceLen)
	var b statedb.Batch
	for i, ns := range isolationNamespaces {
		b.Put(ns, "k", []byte("v"+ns), statedb.Version{Block: 1, Tx: uint32(i)})
		b.Put(ns, "", []byte("empty key"), statedb.Version{Block: 1, Tx: uint32(i)})
	}
	b.Put(longNS, "\xff\xff", []byte("last"), statedb.Version{Block: 1})
	b.Put("gone", "k", []byte("x"), statedb.Version{Block: 1})
	h.apply(&b, 1)
	b.Reset()
	b.Delete("gone", "k", statedb.Version{Block: 2})
	b.Put("a", "k", []byte("new"), statedb.Version{Block: 2, Tx: 7})
	h.apply(&b, 3)

	type entry struct{ enc, text string }
	var want []entry
	add := func(ns, key, data string, ver statedb.Version) {
		want = append(want, entry{string(statedb.AppendKey(nil, ns, key)), fmt.Sprintf("%q/%q=%s@%v", ns, key, data, ver)})
	}
	for i, ns := range isolationNamespaces {
		add(ns, "", "empty key", statedb.Version{Block: 1, Tx: uint32(i)})
		if ns == "a" {
			add(ns, "k", "new", statedb.Version{Block: 2, Tx: 7})
		} else {
			add(ns, "k", "v"+ns, statedb.Version{Block: 1, Tx: uint32(i)})
		}
	}
	add(longNS, "\xff\xff", "last", statedb.Version{Block: 1})
	slices.SortFunc(want, func(a, b entry) int { return strings.Compare(a.enc, b.enc) })
	var wantText []string
	for _, e := range want {
		wantText = append(wantText, e.text)
	}
	var got []string
	sp, err := d.Dump(func(ns, key string, v statedb.Value) error {
		got = append(got, fmt.Sprintf("%q/%q=%s@%v", ns, key, v.Data, v.Version))
		return nil
	})
	if err != nil || sp != 3 {
		t.Fatalf("%s: Dump = savepoint %d, %v; want 3, nil", h.f.Name, sp, err)
	}
	if g, w := strings.Join(got, "\n"), strings.Join(wantText, "\n"); g != w {
		t.Fatalf("%s: Dump visited\n%s\nwant\n%s", h.f.Name, g, w)
	}
	stop := errors.New("stop")
	n := 0
	if _, err := d.Dump(func(string, string, statedb.Value) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("%s: Dump with fn failing at once: %d calls, err %v; want 1 call and fn's error", h.f.Name, n, err)
	}
}
