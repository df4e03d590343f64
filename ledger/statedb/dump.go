package statedb

import (
	"bytes"
	"crypto/sha256"
	"fmt"
)

// Dumper is a DB that can read its whole state from one point-in-time
// view: what a snapshot of the ledger exports. Every backend implements it
// (the conformance suite checks); callers upgrade to it by type assertion.
type Dumper interface {
	// Dump calls fn for every key of every namespace, in ascending byte
	// order of the encoded key (namespace, NUL, key: so by namespace,
	// then key), all from one view, and returns that view's savepoint.
	// fn's error stops the dump and is returned. Values passed to fn are
	// owned by fn.
	Dump(fn func(ns, key string, v Value) error) (savepoint uint64, err error)
}

// DumpLower and DumpUpper bound every encoded state key of the
// byte-ordered backends: the savepoint record (0x00...) lies below
// DumpLower, and a key of the longest namespace of 0xff bytes lies below
// DumpUpper (its NUL separator compares below 0xff). Callers must not
// modify them.
var (
	DumpLower = []byte{0x01}
	DumpUpper = bytes.Repeat([]byte{0xff}, MaxNamespaceLen+1)
)

// MaxNamespaceLen is the longest namespace CheckNamespace accepts.
const MaxNamespaceLen = 128

// Digest hashes everything d holds, as one Dump sees it: every
// namespace, key, value and version, each length-prefixed, in Dump's
// order. Two databases with the same digest and savepoint hold the same
// state; tests and benchmarks compare peers' states with it.
func Digest(d Dumper) (savepoint uint64, keys int, sum [sha256.Size]byte, err error) {
	h := sha256.New()
	savepoint, err = d.Dump(func(ns, key string, v Value) error {
		keys++
		fmt.Fprintf(h, "%d:%s/%d:%s=%d:%s@%s;", len(ns), ns, len(key), key, len(v.Data), v.Data, v.Version)
		return nil
	})
	h.Sum(sum[:0])
	return savepoint, keys, sum, err
}
