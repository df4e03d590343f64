package statedb

import (
	"encoding/binary"
	"fmt"
)

// Layout shared by the byte-ordered on-disk backends, beside the key and
// value encodings of encoding.go:
//
//	savepoint: SavepointKey -> height (8 bytes BE)
//
// SavepointKey starts with 0x00, which no encoded state key does
// (namespaces are non-empty and NUL-free), so it never collides with state
// and never falls inside a namespace's scan range.

// SavepointKey is the key under which byte-ordered backends store the
// savepoint. Callers must not modify it.
var SavepointKey = []byte("\x00savepoint")

// SavepointSize is the size of an encoded savepoint.
const SavepointSize = 8

// AppendSavepoint appends the encoded form of height to dst.
func AppendSavepoint(dst []byte, height uint64) []byte {
	return binary.BigEndian.AppendUint64(dst, height)
}

// DecodeSavepoint decodes a stored savepoint.
func DecodeSavepoint(enc []byte) (uint64, error) {
	if len(enc) != SavepointSize {
		return 0, fmt.Errorf("%w: savepoint record of %d bytes, want %d", ErrCorrupt, len(enc), SavepointSize)
	}
	return binary.BigEndian.Uint64(enc), nil
}

// CheckHeight reports ErrSavepointOrder unless height is above the
// current savepoint cur.
func CheckHeight(height, cur uint64) error {
	if height <= cur {
		return fmt.Errorf("%w: height %d, want more than the savepoint %d", ErrSavepointOrder, height, cur)
	}
	return nil
}

// AppendScanBounds appends the encoded bounds of Scan(ns, start, end) to
// dst and returns them as two slices of the result: every encoded key k of
// ns with start <= key < end (or to the end of the namespace when end is
// empty) has lower <= k < upper. The caller checks that start < end.
func AppendScanBounds(dst []byte, ns, start, end string) (lower, upper []byte) {
	base := len(dst)
	dst = AppendKey(dst, ns, start)
	mid := len(dst)
	if end == "" {
		dst = append(append(dst, ns...), 1) // the first key past the namespace
	} else {
		dst = AppendKey(dst, ns, end)
	}
	return dst[base:mid:mid], dst[mid:]
}

// EmptyRange reports whether Scan(ns, start, end) covers no key.
func EmptyRange(start, end string) bool { return end != "" && start >= end }
