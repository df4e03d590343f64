package statedb

import "bytes"

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
