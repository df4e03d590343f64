package p256

import (
	"crypto/elliptic"
	"math/big"

	"filippo.io/nistec"
	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"
)

// n is the order of P-256's base point.
var n = elliptic.P256().Params().N

// Verify reports whether sig, an ASN.1 DER ECDSA signature, is valid for
// digest under the table's key, exactly as ecdsa.VerifyASN1 would answer.
// A digest longer than 32 bytes is truncated to its leftmost 32 bytes.
// It is variable-time: signatures and digests are public.
func (t *Table) Verify(digest, sig []byte) bool {
	rb, sb, ok := parseSignature(sig)
	if !ok {
		return false
	}
	r, ok := scalar(rb)
	if !ok {
		return false
	}
	s, ok := scalar(sb)
	if !ok {
		return false
	}
	if len(digest) > 32 {
		digest = digest[:32] // P-256's order is 256 bits: no shift needed
	}
	e := new(big.Int).SetBytes(digest)
	if e.Cmp(n) >= 0 {
		e.Sub(e, n) // e < 2^256 < 2N
	}

	w := new(big.Int).ModInverse(s, n) // s in [1, N-1] and N prime: exists
	u1 := e.Mul(e, w)
	u1.Mod(u1, n)
	u2 := w.Mul(w, r)
	u2.Mod(u2, n)

	var k1, k2 [32]byte
	u1.FillBytes(k1[:])
	u2.FillBytes(k2[:])
	R, err := nistec.NewP256Point().ScalarBaseMult(k1[:])
	if err != nil {
		return false
	}
	t.mult(R, &k2)
	x, err := R.BytesX() // errors for the point at infinity
	if err != nil {
		return false
	}
	v := new(big.Int).SetBytes(x)
	if v.Cmp(n) >= 0 {
		v.Sub(v, n) // x < p < 2N
	}
	return v.Cmp(r) == 0
}

// parseSignature splits a DER SEQUENCE of two non-negative INTEGERs, with
// the same cryptobyte calls as crypto/ecdsa.
func parseSignature(sig []byte) (r, s []byte, ok bool) {
	var inner cryptobyte.String
	input := cryptobyte.String(sig)
	if !input.ReadASN1(&inner, asn1.SEQUENCE) ||
		!input.Empty() ||
		!inner.ReadASN1Integer(&r) ||
		!inner.ReadASN1Integer(&s) ||
		!inner.Empty() {
		return nil, nil, false
	}
	return r, s, true
}

// scalar decodes b (big-endian, no leading zeros beyond one) and accepts
// it only in [1, N-1], as crypto/ecdsa does for r and s.
func scalar(b []byte) (*big.Int, bool) {
	if len(b) > 32 {
		return nil, false
	}
	v := new(big.Int).SetBytes(b)
	if v.Sign() == 0 || v.Cmp(n) >= 0 {
		return nil, false
	}
	return v, true
}
