package statedb

import (
	"errors"
	"fmt"
)

// Version names the write that produced a value: the block number and the
// transaction's index in that block. Versions are totally ordered.
type Version struct {
	Block uint64
	Tx    uint32
}

// Less reports whether v comes before w.
func (v Version) Less(w Version) bool {
	return v.Block < w.Block || (v.Block == w.Block && v.Tx < w.Tx)
}

func (v Version) String() string { return fmt.Sprintf("%d:%d", v.Block, v.Tx) }

// Value is a key's value with its version.
type Value struct {
	Data    []byte
	Version Version
}

// Key addresses one key of one namespace.
type Key struct {
	Namespace string
	Key       string
}

// Result is one answer of GetMany.
type Result struct {
	Value Value
	Found bool
}

// Write is one update of a batch: a put, or a delete when Delete is set.
type Write struct {
	Namespace string
	Key       string
	Value     []byte
	Delete    bool
	Version   Version
}

// Batch is an ordered list of writes applied atomically; where two writes
// name the same key, the later one wins.
type Batch struct {
	Writes []Write
}

// Put appends a put.
func (b *Batch) Put(ns, key string, value []byte, v Version) {
	b.Writes = append(b.Writes, Write{Namespace: ns, Key: key, Value: value, Version: v})
}

// Delete appends a delete.
func (b *Batch) Delete(ns, key string, v Version) {
	b.Writes = append(b.Writes, Write{Namespace: ns, Key: key, Delete: true, Version: v})
}

// CheckNamespaces returns the first namespace error among the writes
// (ErrBadNamespace), checking each run of equal namespaces once. Backends
// call it before applying anything, so a bad batch is rejected whole. A nil
// batch has no writes.
func (b *Batch) CheckNamespaces() error {
	if b == nil {
		return nil
	}
	for i := range b.Writes {
		w := &b.Writes[i]
		if i > 0 && w.Namespace == b.Writes[i-1].Namespace {
			continue
		}
		if err := CheckNamespace(w.Namespace); err != nil {
			return fmt.Errorf("write %d of the batch (key %q): %w", i, w.Key, err)
		}
	}
	return nil
}

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() { b.Writes = b.Writes[:0] }

// DB is a versioned key-value state database. Methods are safe for
// concurrent use; Apply calls are serialised by the caller (one committer).
type DB interface {
	// Get returns the value of (ns, key) and whether it exists.
	Get(ns, key string) (Value, bool, error)
	// GetMany looks up keys[i] into out[i]; len(out) must equal len(keys).
	// Backends may order the lookups for locality.
	GetMany(keys []Key, out []Result) error
	// Scan calls fn for each key of ns in [start, end) in ascending byte
	// order; an empty end means to the end of the namespace. fn returning
	// false stops the scan. Values passed to fn are owned by fn.
	Scan(ns, start, end string, fn func(key string, v Value) bool) error
	// Apply writes the batch and sets the savepoint to height, atomically.
	// height must be greater than the current savepoint. A backend that
	// cannot write a batch this large in one atomic step (Badger) writes
	// nothing and returns an error wrapping ErrBatchTooBig; the caller may
	// then apply it in parts, each with its own savepoint.
	Apply(b *Batch, height uint64, sync bool) error
	// Savepoint returns the height: the number of blocks applied.
	Savepoint() (uint64, error)
	// Close releases the database. Using it afterwards is an error.
	Close() error
}

// Errors shared by backends; test with errors.Is.
var (
	ErrClosed          = errors.New("statedb: closed")
	ErrSavepointOrder  = errors.New("statedb: savepoint must increase")
	ErrCorrupt         = errors.New("statedb: corruption")
	ErrBadNamespace    = errors.New("statedb: invalid namespace")
	ErrLengthsMismatch = errors.New("statedb: GetMany needs len(out) == len(keys)")
	ErrBatchTooBig     = errors.New("statedb: batch too big for one atomic write")
)

// Errors of backends reached over the network (the memory node); test
// with errors.Is. Both are retryable: nothing was written or read.
var (
	// ErrUnavailable: the backend did not answer. The caller may retry;
	// the committer waits (backpressure), an endorsement fails with it.
	ErrUnavailable = errors.New("statedb: unavailable (retryable)")
	// ErrStateLost: the backend restarted and holds the state of a lower
	// height than the caller applied (a memory tier that lost its blocks
	// above the storage tier's savepoint). Savepoint then reports the
	// lower height, and the caller must re-apply the blocks above it from
	// the block store before applying or reading anything newer.
	ErrStateLost = errors.New("statedb: state lost above the savepoint (re-apply from the block store)")
)
