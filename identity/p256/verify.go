package p256

import (
	"crypto/elliptic"
	"math/big"
	"sync"

	"filippo.io/nistec"
	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"
)

// n is the order of P-256's base point.
var n = elliptic.P256().Params().N

// scratch holds one verification's integers, pooled so that their
// backing arrays are reused: a verification allocates little more than
// the standard library's.
type scratch struct {
	r, s, e, w, u, v big.Int
	R                nistec.P256Point
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Verify reports whether sig, an ASN.1 DER ECDSA signature, is valid for
// digest under the table's key, exactly as ecdsa.VerifyASN1 would answer.
// A digest longer than 32 bytes is truncated to its leftmost 32 bytes.
// It is variable-time: signatures and digests are public.
func (t *Table) Verify(digest, sig []byte) bool {
	rb, sb, ok := parseSignature(sig)
	if !ok {
		return false
	}
	z := scratchPool.Get().(*scratch)
	defer scratchPool.Put(z)
	if !scalar(&z.r, rb) || !scalar(&z.s, sb) {
		return false
	}
	if len(digest) > 32 {
		digest = digest[:32] // P-256's order is 256 bits: no shift needed
	}
	e := z.e.SetBytes(digest)
	if e.Cmp(n) >= 0 {
		e.Sub(e, n) // e < 2^256 < 2N
	}

	w := z.w.ModInverse(&z.s, n) // s in [1, N-1] and N prime: exists
	u := z.u.Mul(e, w)
	u.Mod(u, n) // u1
	var k1, k2 [32]byte
	u.FillBytes(k1[:])
	u.Mul(w, &z.r)
	u.Mod(u, n) // u2
	u.FillBytes(k2[:])

	R, err := z.R.ScalarBaseMult(k1[:])
	if err != nil {
		return false
	}
	t.mult(R, &k2)
	var xb [32]byte
	x, err := R.BytesX() // errors for the point at infinity
	if err != nil {
		return false
	}
	copy(xb[:], x)
	v := z.v.SetBytes(xb[:])
	if v.Cmp(n) >= 0 {
		v.Sub(v, n) // x < p < 2N
	}
	return v.Cmp(&z.r) == 0
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
func scalar(v *big.Int, b []byte) bool {
	if len(b) > 32 {
		return false
	}
	v.SetBytes(b)
	return v.Sign() != 0 && v.Cmp(n) < 0
}
