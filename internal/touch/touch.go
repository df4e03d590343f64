// Package touch reads memory ahead of the work that needs it, so that
// cache misses overlap: identity/p256 and identity/zip215 touch every
// table entry a multiplication will add before the first addition (a
// node's other work evicts its key tables between two checks, and the
// additions would otherwise stall on one miss after another).
package touch

import "unsafe"

// Words reads one 8-byte word of every cache line the size bytes at p
// span (words 64 bytes apart, and the last) and returns their sum. The
// caller keeps the sum alive (runtime.KeepAlive) so that the loads
// happen. p must be 8-byte aligned and size a positive multiple of 8.
func Words(p unsafe.Pointer, size uintptr) uint64 {
	sum := *(*uint64)(unsafe.Add(p, size-8))
	for off := uintptr(0); off < size; off += 64 {
		sum += *(*uint64)(unsafe.Add(p, off))
	}
	return sum
}
