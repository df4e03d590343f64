//go:build wasip1

package strand

import "unsafe"

// The host functions of ABI v1 (module "strand"). A function answering
// with bytes writes them to (dst, cap) when they fit and returns their
// length either way; take fetches an answer that did not fit.

//go:wasmimport strand input
func hostInput(dst unsafe.Pointer, cap int32) int32

//go:wasmimport strand tx_id
func hostTxID(dst unsafe.Pointer, cap int32) int32

//go:wasmimport strand channel
func hostChannel(dst unsafe.Pointer, cap int32) int32

//go:wasmimport strand creator
func hostCreator(dst unsafe.Pointer, cap int32) int32

//go:wasmimport strand timestamp
func hostTimestamp() int64

//go:wasmimport strand get
func hostGet(key unsafe.Pointer, keyLen int32, dst unsafe.Pointer, cap int32) int32

//go:wasmimport strand get_multi
func hostGetMulti(keys unsafe.Pointer, keysLen int32, dst unsafe.Pointer, cap int32) int32

//go:wasmimport strand put
func hostPut(key unsafe.Pointer, keyLen int32, val unsafe.Pointer, valLen int32) int32

//go:wasmimport strand del
func hostDel(key unsafe.Pointer, keyLen int32) int32

//go:wasmimport strand range
func hostRange(start unsafe.Pointer, startLen int32, end unsafe.Pointer, endLen int32, bookmark unsafe.Pointer, bookmarkLen int32, pageSize int32, dst unsafe.Pointer, cap int32) int32

//go:wasmimport strand set_event
func hostSetEvent(name unsafe.Pointer, nameLen int32, payload unsafe.Pointer, payloadLen int32) int32

//go:wasmimport strand take
func hostTake(dst unsafe.Pointer, cap int32) int32

//go:wasmimport strand result
func hostResult(p unsafe.Pointer, n int32)

//go:wasmimport strand fail
func hostFail(status int32, msg unsafe.Pointer, msgLen int32)

// Return codes.
const (
	retAbsent = -1
	retError  = -2
)

// ptr is the address of b's first byte, nil for an empty b.
func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

// sptr is the address of s's first byte, nil for an empty s.
func sptr(s string) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.StringData(s))
}
