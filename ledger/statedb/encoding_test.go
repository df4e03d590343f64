package statedb_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
)

func TestKeyEncodingRoundTrip(t *testing.T) {
	for _, c := range []struct{ ns, key string }{
		{"a", ""}, {"a", "\x00"}, {"cc", "k\x00\xff"}, {"\xff", "x"},
	} {
		enc := statedb.AppendKey([]byte("junk"), c.ns, c.key)[4:]
		ns, key, err := statedb.SplitKey(enc)
		if err != nil || ns != c.ns || key != c.key {
			t.Errorf("SplitKey(AppendKey(%q, %q)) = %q, %q, %v", c.ns, c.key, ns, key, err)
		}
	}
	if _, _, err := statedb.SplitKey([]byte("no-separator")); !errors.Is(err, statedb.ErrCorrupt) {
		t.Errorf("SplitKey without NUL: err = %v, want ErrCorrupt", err)
	}
}

// TestKeyEncodingOrder checks that encoded keys of one namespace sort like
// their keys and never interleave with another namespace's.
func TestKeyEncodingOrder(t *testing.T) {
	a1 := statedb.AppendKey(nil, "a", "\xff\xff")
	ab := statedb.AppendKey(nil, "ab", "")
	if bytes.Compare(a1, ab) >= 0 {
		t.Errorf("encoded (a, \\xff\\xff) = %q sorts at or after (ab, \"\") = %q", a1, ab)
	}
	if k1, k2 := statedb.AppendKey(nil, "a", "b"), statedb.AppendKey(nil, "a", "b\x00"); bytes.Compare(k1, k2) >= 0 {
		t.Errorf("encoded keys out of order: %q >= %q", k1, k2)
	}
}

func TestValueEncodingRoundTrip(t *testing.T) {
	in := statedb.Value{Data: []byte("data\x00"), Version: statedb.Version{Block: 1<<64 - 1, Tx: 7}}
	enc := statedb.AppendValue(nil, in)
	out, err := statedb.DecodeValue(enc)
	if err != nil || !bytes.Equal(out.Data, in.Data) || out.Version != in.Version {
		t.Fatalf("DecodeValue(AppendValue(%v)) = %v, %v", in, out, err)
	}
	enc[statedb.VersionSize] = 'X'
	if out.Data[0] != 'd' {
		t.Fatal("DecodeValue's data aliases its input")
	}
	if _, err := statedb.DecodeValue(enc[:statedb.VersionSize-1]); !errors.Is(err, statedb.ErrCorrupt) {
		t.Fatalf("DecodeValue of %d bytes: err = %v, want ErrCorrupt", statedb.VersionSize-1, err)
	}
}

func TestCheckNamespace(t *testing.T) {
	for ns, ok := range map[string]bool{"a": true, "": false, "a\x00": false, string(make([]byte, 128)): false} {
		if err := statedb.CheckNamespace(ns); (err == nil) != ok || (err != nil && !errors.Is(err, statedb.ErrBadNamespace)) {
			t.Errorf("CheckNamespace(%q) = %v, want ok=%v", ns, err, ok)
		}
	}
}
