package wasm

import (
	"encoding/binary"
	"fmt"
)

// ABIVersion is the version of the host ABI this package implements. A
// module declares the version it was built for by exporting the function
// named ABIExport; a later, incompatible ABI gets a new export name, so an
// old module keeps running unchanged (docs/contracts.md).
const (
	ABIVersion = 1
	ABIExport  = "strand_abi_v1"
	// InvokeExport is the module's entry point: () -> i32, 0 when the call
	// ran to its end (its outcome set through result or fail).
	InvokeExport = "strand_invoke"
	// InitExport, optional, () -> (), runs once per instance before any
	// call (Go's runtime and package inits, C's constructors), under the
	// engine's fuel budget.
	InitExport = "_initialize"
	// HostModule is the import module of the host functions.
	HostModule = "strand"
	// WASIModule is the import module of the deterministic WASI stubs.
	WASIModule = "wasi_snapshot_preview1"
)

// Return codes of host functions that answer with a length.
const (
	retAbsent = -1 // get: the key does not exist
	retError  = -2 // the stub refused; the message is pending (take)
)

// absentLen marks an absent value in an encoded list (get_multi).
const absentLen = 0xFFFFFFFF

// appendList encodes items as the ABI's list: a little-endian u32 count,
// then each item as a u32 length and its bytes; a nil item in a list that
// allows absence (nilAbsent) is the length 0xFFFFFFFF and no bytes.
func appendList(dst []byte, nilAbsent bool, items ...[]byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(items)))
	for _, it := range items {
		if it == nil && nilAbsent {
			dst = binary.LittleEndian.AppendUint32(dst, absentLen)
			continue
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(it)))
		dst = append(dst, it...)
	}
	return dst
}

// decodeList decodes a list of at most max items that allows no absent
// item.
func decodeList(b []byte, max int) ([]string, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("list of %d bytes: want at least a 4-byte count", len(b))
	}
	n := binary.LittleEndian.Uint32(b)
	if int64(n) > int64(max) {
		return nil, fmt.Errorf("list of %d items: want at most %d", n, max)
	}
	b = b[4:]
	out := make([]string, n)
	for i := range out {
		if len(b) < 4 {
			return nil, fmt.Errorf("list item %d: truncated length", i)
		}
		l := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if uint64(l) > uint64(len(b)) {
			return nil, fmt.Errorf("list item %d: length %d, only %d bytes left", i, l, len(b))
		}
		out[i] = string(b[:l])
		b = b[l:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("list: %d bytes after the last item", len(b))
	}
	return out, nil
}
