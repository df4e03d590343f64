package lifecycle

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A WebAssembly module travels in its definition transaction, and sits in
// the state under CodeKey, zstd-compressed: Go's wasip1 port links its
// runtime into every module, so a contract of a few lines is about 4.6 MB
// (over what one transaction may carry) and 1.2 MB compressed. The code
// hash is always the SHA-256 of the module itself, never of the stored
// bytes, so a definition names the same hash however its code is carried.
//
// Stored code that starts with zstd's frame magic is compressed; anything
// else is the code itself (a module starts "\x00asm", an external
// connection package '{'), which is how definitions written before
// compression still load.

// MaxModuleBytes bounds a module once decompressed: what a definition
// transaction of at most MaxCodeBytes may expand to.
const MaxModuleBytes = 32 << 20

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

var zstdCodec = sync.OnceValues(func() (*zstd.Encoder, *zstd.Decoder) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err) // fixed, valid options
	}
	// DecodeAll refuses output beyond the decoder's memory limit, so a
	// small frame that claims (or expands to) more than MaxModuleBytes is
	// an error, not an allocation.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxModuleBytes), zstd.WithDecoderConcurrency(0))
	if err != nil {
		panic(err)
	}
	return enc, dec
})

// PackCode returns code as a definition transaction carries it: a wasm
// module compressed, anything else as it is.
func PackCode(runtime string, code []byte) []byte {
	if runtime != RuntimeWasm {
		return code
	}
	enc, _ := zstdCodec()
	return enc.EncodeAll(code, make([]byte, 0, len(code)/3))
}

// UnpackCode returns the code that stored (a definition's CodeKey write,
// or its value in the state) carries.
func UnpackCode(stored []byte) ([]byte, error) {
	if !bytes.HasPrefix(stored, zstdMagic) {
		return stored, nil
	}
	_, dec := zstdCodec()
	code, err := dec.DecodeAll(stored, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: code of %d bytes compressed does not decompress to at most %d bytes: %v", ErrMalformed, len(stored), MaxModuleBytes, err)
	}
	return code, nil
}
