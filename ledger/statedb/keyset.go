package statedb

import (
	"bytes"
	"fmt"
	"slices"
)

// KeySet holds the encoded keys of one GetMany call and the order that
// visits them ascending, so that a backend can look them up with locality
// (one iterator or one transaction, moving forward). Reuse one across
// calls to keep its memory; it is not safe for concurrent use.
type KeySet struct {
	buf   []byte // encoded keys, back to back
	ends  []int  // ends[i] is the end of key i in buf
	order []int  // indexes into the keys, sorted by encoded key
}

// Load checks a GetMany call's arguments (ErrLengthsMismatch,
// ErrBadNamespace) and encodes and sorts its keys.
func (s *KeySet) Load(keys []Key, out []Result) error { return s.LoadN(keys, len(out)) }

// LoadN is Load for a call with results of another type: n is their
// number.
func (s *KeySet) LoadN(keys []Key, n int) error {
	if len(keys) != n {
		return fmt.Errorf("%w: %d keys, %d results", ErrLengthsMismatch, len(keys), n)
	}
	s.buf, s.ends, s.order = s.buf[:0], s.ends[:0], s.order[:0]
	for i, k := range keys {
		if i == 0 || k.Namespace != keys[i-1].Namespace {
			if err := CheckNamespace(k.Namespace); err != nil {
				return fmt.Errorf("key %d of GetMany: %w", i, err)
			}
		}
		s.buf = AppendKey(s.buf, k.Namespace, k.Key)
		s.ends = append(s.ends, len(s.buf))
		s.order = append(s.order, i)
	}
	slices.SortFunc(s.order, func(a, b int) int { return bytes.Compare(s.Key(a), s.Key(b)) })
	return nil
}

// Order returns the indexes of the keys in ascending encoded order. The
// caller must not modify it.
func (s *KeySet) Order() []int { return s.order }

// Key returns the encoded form of key i. The caller must not modify it.
func (s *KeySet) Key(i int) []byte {
	start := 0
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.buf[start:s.ends[i]:s.ends[i]]
}
