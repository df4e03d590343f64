package conformance

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
)

func basicCases() []testCase {
	return []testCase{
		{name: "PutGetVersion", run: testPutGetVersion},
		{name: "MissingKey", run: testMissingKey},
		{name: "Delete", run: testDelete},
		{name: "EmptyValue", run: testEmptyValue},
		{name: "BinaryKeys", run: testBinaryKeys},
		{name: "LargeValue", run: testLargeValue},
	}
}

func testPutGetVersion(t *testing.T, h *harness) {
	h.put("cc", "k", []byte("v1"), statedb.Version{Block: 0, Tx: 3}, 1)
	h.wantValue("cc", "k", []byte("v1"), statedb.Version{Block: 0, Tx: 3})
	h.put("cc", "k", []byte("v2"), statedb.Version{Block: 1<<63 + 5, Tx: 1<<32 - 1}, 2)
	h.wantValue("cc", "k", []byte("v2"), statedb.Version{Block: 1<<63 + 5, Tx: 1<<32 - 1})
	h.wantSavepoint(2)
}

func testMissingKey(t *testing.T, h *harness) {
	h.wantMissing("cc", "nope")
	h.put("cc", "k", []byte("v"), statedb.Version{Block: 1}, 1)
	h.wantMissing("cc", "nope")
	h.wantMissing("cc", "k\x00")
	h.wantMissing("cc", "")
	h.wantMissing("other", "k")
}

func testDelete(t *testing.T, h *harness) {
	h.put("cc", "k", []byte("v"), statedb.Version{Block: 1}, 1)
	var b statedb.Batch
	b.Delete("cc", "k", statedb.Version{Block: 2})
	b.Delete("cc", "never-written", statedb.Version{Block: 2})
	h.apply(&b, 2)
	h.wantMissing("cc", "k")
	h.wantMissing("cc", "never-written")
	if keys := h.scanKeys("cc", "", ""); len(keys) != 0 {
		t.Fatalf("%s: Scan after deleting every key = %q, want none", h.f.Name, keys)
	}
	h.put("cc", "k", []byte("again"), statedb.Version{Block: 3}, 3)
	h.wantValue("cc", "k", []byte("again"), statedb.Version{Block: 3})
}

func testEmptyValue(t *testing.T, h *harness) {
	var b statedb.Batch
	b.Put("cc", "nil", nil, statedb.Version{Block: 1, Tx: 1})
	b.Put("cc", "empty", []byte{}, statedb.Version{Block: 1, Tx: 2})
	h.apply(&b, 1)
	h.wantValue("cc", "nil", nil, statedb.Version{Block: 1, Tx: 1})
	h.wantValue("cc", "empty", nil, statedb.Version{Block: 1, Tx: 2})
	if keys := h.scanKeys("cc", "", ""); !equalStrings(keys, []string{"empty", "nil"}) {
		t.Fatalf("%s: Scan = %q, want both empty values listed", h.f.Name, keys)
	}
	b.Reset()
	b.Delete("cc", "nil", statedb.Version{Block: 2})
	h.apply(&b, 2)
	h.wantMissing("cc", "nil")
	h.wantValue("cc", "empty", nil, statedb.Version{Block: 1, Tx: 2})
}

// binaryKeys are keys with NUL and 0xff bytes, in ascending byte order.
var binaryKeys = []string{"", "\x00", "\x00\x00", "\x00\xff", "\x01", "a", "a\x00", "a\x00b", "a\xff", "\xff", "\xff\x00", "\xff\xff"}

func testBinaryKeys(t *testing.T, h *harness) {
	var b statedb.Batch
	for i, k := range binaryKeys {
		b.Put("cc", k, []byte{byte(i), 0, 0xff}, statedb.Version{Block: 1, Tx: uint32(i)})
	}
	h.apply(&b, 1)
	for i, k := range binaryKeys {
		h.wantValue("cc", k, []byte{byte(i), 0, 0xff}, statedb.Version{Block: 1, Tx: uint32(i)})
	}
	if keys := h.scanKeys("cc", "", ""); !equalStrings(keys, binaryKeys) {
		t.Fatalf("%s: Scan all = %q, want %q", h.f.Name, keys, binaryKeys)
	}
	if keys, want := h.scanKeys("cc", "\x00", "a\x00b"), binaryKeys[1:7]; !equalStrings(keys, want) {
		t.Fatalf("%s: Scan [\\x00, a\\x00b) = %q, want %q", h.f.Name, keys, want)
	}
	if keys, want := h.scanKeys("cc", "a\xff", ""), binaryKeys[8:]; !equalStrings(keys, want) {
		t.Fatalf("%s: Scan [a\\xff, end) = %q, want %q", h.f.Name, keys, want)
	}
	h.wantMissing("cc", "\x00\x01")
}

func testLargeValue(t *testing.T, h *harness) {
	for i, size := range []int{64 << 10, 1 << 20} {
		data := bytes.Repeat([]byte{0xab, 0x00, byte(i)}, size/3+1)[:size]
		key := strings.Repeat("k", 1000) + string(rune('0'+i))
		h.put("cc", key, data, statedb.Version{Block: uint64(i + 1)}, uint64(i+1))
		h.wantValue("cc", key, data, statedb.Version{Block: uint64(i + 1)})
	}
}

func batchCases() []testCase {
	return []testCase{
		{name: "LastWriteWins", run: testLastWriteWins},
		{name: "Savepoint", run: testSavepoint},
		{name: "BadNamespace", run: testBadNamespace},
		{name: "BatchNotRetained", run: testBatchNotRetained},
	}
}

func testLastWriteWins(t *testing.T, h *harness) {
	var b statedb.Batch
	b.Put("cc", "put-put", []byte("first"), statedb.Version{Block: 1, Tx: 0})
	b.Put("cc", "put-put", []byte("second"), statedb.Version{Block: 1, Tx: 1})
	b.Put("cc", "put-del", []byte("x"), statedb.Version{Block: 1, Tx: 0})
	b.Delete("cc", "put-del", statedb.Version{Block: 1, Tx: 1})
	b.Delete("cc", "del-put", statedb.Version{Block: 1, Tx: 0})
	b.Put("cc", "del-put", []byte("back"), statedb.Version{Block: 1, Tx: 1})
	b.Put("cc", "put-del-put", []byte("a"), statedb.Version{Block: 1, Tx: 0})
	b.Delete("cc", "put-del-put", statedb.Version{Block: 1, Tx: 1})
	b.Put("cc", "put-del-put", []byte("c"), statedb.Version{Block: 1, Tx: 2})
	h.apply(&b, 1)
	h.wantValue("cc", "put-put", []byte("second"), statedb.Version{Block: 1, Tx: 1})
	h.wantMissing("cc", "put-del")
	h.wantValue("cc", "del-put", []byte("back"), statedb.Version{Block: 1, Tx: 1})
	h.wantValue("cc", "put-del-put", []byte("c"), statedb.Version{Block: 1, Tx: 2})
}

func testSavepoint(t *testing.T, h *harness) {
	h.wantSavepoint(0)
	var b statedb.Batch
	b.Put("cc", "k", []byte("v"), statedb.Version{Block: 0})
	if err := h.db.Apply(&b, 0, false); !errors.Is(err, statedb.ErrSavepointOrder) {
		t.Fatalf("%s: Apply at height 0 on a new DB: err = %v, want ErrSavepointOrder", h.f.Name, err)
	}
	h.wantMissing("cc", "k")
	h.apply(&b, 1)
	h.wantSavepoint(1)
	for _, height := range []uint64{1, 0} {
		var bad statedb.Batch
		bad.Put("cc", "k", []byte("stale"), statedb.Version{Block: 9})
		bad.Put("cc", "new", []byte("stale"), statedb.Version{Block: 9})
		if err := h.db.Apply(&bad, height, true); !errors.Is(err, statedb.ErrSavepointOrder) {
			t.Fatalf("%s: Apply at height %d after savepoint 1: err = %v, want ErrSavepointOrder", h.f.Name, height, err)
		}
		h.wantValue("cc", "k", []byte("v"), statedb.Version{Block: 0})
		h.wantMissing("cc", "new")
		h.wantSavepoint(1)
	}
	// Heights may skip, and an empty or nil batch still moves the savepoint.
	h.apply(&statedb.Batch{}, 7)
	h.wantSavepoint(7)
	if err := h.db.Apply(nil, 8, true); err != nil {
		t.Fatalf("%s: Apply(nil, 8, true): %v", h.f.Name, err)
	}
	h.wantSavepoint(8)
	h.apply(&statedb.Batch{}, 1<<64-1)
	h.wantSavepoint(1<<64 - 1)
}

// badNamespaces are namespaces that api.CheckNamespace rejects.
var badNamespaces = []string{"", "a\x00b", "\x00", strings.Repeat("n", 129)}

func testBadNamespace(t *testing.T, h *harness) {
	h.put("cc", "k", []byte("v"), statedb.Version{Block: 0}, 1)
	for _, ns := range badNamespaces {
		var b statedb.Batch
		b.Put("cc", "k", []byte("changed"), statedb.Version{Block: 1})
		b.Put("cc", "new", []byte("x"), statedb.Version{Block: 1})
		b.Put(ns, "savepoint", []byte("x"), statedb.Version{Block: 1})
		if err := h.db.Apply(&b, 2, false); !errors.Is(err, statedb.ErrBadNamespace) {
			t.Fatalf("%s: Apply with namespace %q: err = %v, want ErrBadNamespace", h.f.Name, ns, err)
		}
		b.Reset()
		b.Delete(ns, "k", statedb.Version{Block: 1})
		if err := h.db.Apply(&b, 2, false); !errors.Is(err, statedb.ErrBadNamespace) {
			t.Fatalf("%s: Apply deleting in namespace %q: err = %v, want ErrBadNamespace", h.f.Name, ns, err)
		}
		h.wantValue("cc", "k", []byte("v"), statedb.Version{Block: 0})
		h.wantMissing("cc", "new")
		h.wantSavepoint(1)
	}
	// Longest valid namespace, and one with every byte but NUL.
	long := strings.Repeat("n", 128)
	var odd []byte
	for c := 1; c < 129; c++ {
		odd = append(odd, byte(c+127))
	}
	h.put(long, "k", []byte("long"), statedb.Version{Block: 2}, 2)
	h.put(string(odd), "k", []byte("odd"), statedb.Version{Block: 3}, 3)
	h.wantValue(long, "k", []byte("long"), statedb.Version{Block: 2})
	h.wantValue(string(odd), "k", []byte("odd"), statedb.Version{Block: 3})
}

func testBatchNotRetained(t *testing.T, h *harness) {
	data := []byte("original")
	var b statedb.Batch
	b.Put("cc", "k", data, statedb.Version{Block: 1})
	h.apply(&b, 1)
	copy(data, "MUTATED!")
	b.Writes[0].Key = "other"
	h.wantValue("cc", "k", []byte("original"), statedb.Version{Block: 1})
	h.wantMissing("cc", "other")
}
