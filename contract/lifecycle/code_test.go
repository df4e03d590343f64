package lifecycle

import (
	"bytes"
	"errors"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/strand-ledger/strand/api"
)

// TestPackedCode: a wasm module travels compressed and comes back as
// itself; a module written raw (before compression) still passes; the
// code hash is the module's, never the stored bytes'; a frame that does
// not decompress, or expands past MaxModuleBytes, is malformed.
func TestPackedCode(t *testing.T) {
	// Larger than a transaction carries, as a Go module is, and
	// compressible as one is.
	module := append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte("strand contract section "), (MaxCodeBytes+1<<20)/24)...)
	d := def("cc", 1)
	d.Runtime, d.CodeHash = RuntimeWasm, CodeHash(module)
	if _, err := d.Encode(); err != nil {
		t.Fatal(err)
	}
	rw := Writes(d, module)
	stored := rw.Namespaces[0].Writes[1].Value
	if len(stored) >= len(module) || len(stored) > MaxCodeBytes {
		t.Fatalf("a %d-byte module is carried as %d bytes, want compressed under %d", len(module), len(stored), MaxCodeBytes)
	}
	_, code, err := CheckWrites("ch", isOrg, rw)
	if err != nil || !bytes.Equal(code, module) {
		t.Fatalf("CheckWrites of a compressed module: %v (code equal: %v)", err, bytes.Equal(code, module))
	}
	if got, err := UnpackCode(stored); err != nil || !bytes.Equal(got, module) {
		t.Fatalf("UnpackCode: %v", err)
	}

	small := []byte("\x00asm\x01\x00\x00\x00 written before compression")
	d2 := def("cc", 1)
	d2.Runtime, d2.CodeHash = RuntimeWasm, CodeHash(small)
	if _, err := d2.Encode(); err != nil {
		t.Fatal(err)
	}
	raw := &api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: Namespace, Writes: []*api.KVWrite{
		{Key: DefKey("cc"), Value: d2.Raw}, {Key: CodeKey(d2.CodeHash), Value: small}}}}}
	if _, code, err := CheckWrites("ch", isOrg, raw); err != nil || !bytes.Equal(code, small) {
		t.Fatalf("CheckWrites of a raw module: %v", err)
	}

	// A definition naming the hash of the compressed bytes names no module.
	d3 := def("cc", 1)
	d3.Runtime, d3.CodeHash = RuntimeWasm, CodeHash(stored)
	if _, err := d3.Encode(); err != nil {
		t.Fatal(err)
	}
	byStored := &api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: Namespace, Writes: []*api.KVWrite{
		{Key: DefKey("cc"), Value: d3.Raw}, {Key: CodeKey(d3.CodeHash), Value: stored}}}}}
	if _, _, err := CheckWrites("ch", isOrg, byStored); !errors.Is(err, ErrCodeHash) {
		t.Errorf("a definition hashing the compressed bytes: %v, want %v", err, ErrCodeHash)
	}

	corrupt := bytes.Clone(stored)
	corrupt[len(corrupt)/2] ^= 0xff
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	bomb := enc.EncodeAll(make([]byte, MaxModuleBytes+1), nil) // ~1 KiB that expands past the limit
	for name, b := range map[string][]byte{"corrupt": corrupt, "bomb": bomb, "magic only": zstdMagic} {
		if _, err := UnpackCode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s (%d bytes): UnpackCode = %v, want %v", name, len(b), err, ErrMalformed)
		}
		rw := Writes(d, module)
		rw.Namespaces[0].Writes[1].Value = b
		if _, _, err := CheckWrites("ch", isOrg, rw); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: CheckWrites = %v, want %v", name, err, ErrMalformed)
		}
	}
}

// FuzzUnpackCode: stored code from a transaction never panics or expands
// past MaxModuleBytes, and packed code unpacks to itself.
func FuzzUnpackCode(f *testing.F) {
	f.Add(PackCode(RuntimeWasm, []byte("\x00asm\x01\x00\x00\x00")))
	f.Add([]byte("\x00asm"))
	f.Add(append(bytes.Clone(zstdMagic), 0, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		code, err := UnpackCode(b)
		if err == nil && len(code) > MaxModuleBytes {
			t.Fatalf("%d bytes unpacked to %d, over %d", len(b), len(code), MaxModuleBytes)
		}
		if got, err := UnpackCode(PackCode(RuntimeWasm, b)); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("packed code does not unpack to itself: %v", err)
		}
	})
}
