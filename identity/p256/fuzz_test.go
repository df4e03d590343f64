package p256

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"math/big"
	"testing"
)

// fuzzKey is a fixed private key, so the fuzzer can reach valid signatures
// from seeds signed with it.
var fuzzKey = func() *ecdsa.PrivateKey {
	d, _ := new(big.Int).SetString("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721", 16)
	k := &ecdsa.PrivateKey{D: d, PublicKey: ecdsa.PublicKey{Curve: elliptic.P256()}}
	k.X, k.Y = elliptic.P256().ScalarBaseMult(d.Bytes())
	return k
}()

var fuzzTable = func() *Table {
	t, err := NewTable(&fuzzKey.PublicKey)
	if err != nil {
		panic(err)
	}
	return t
}()

// FuzzVerify compares Table.Verify with ecdsa.VerifyASN1 on arbitrary
// digests and signature bytes under a fixed key.
func FuzzVerify(f *testing.F) {
	for _, m := range []string{"", "a", "strand"} {
		d := sha256.Sum256([]byte(m))
		sig, err := ecdsa.SignASN1(rand.Reader, fuzzKey, d[:])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(d[:], sig)
	}
	f.Add([]byte{}, []byte{0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01})
	f.Fuzz(func(t *testing.T, digest, sig []byte) {
		check(t, fuzzTable, &fuzzKey.PublicKey, digest, sig, "fuzz")
	})
}
