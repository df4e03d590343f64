package zip215

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"math/rand/v2"
	"testing"

	"filippo.io/edwards25519"
)

// lBytes is the group order L, little-endian: s = L is the smallest
// non-canonical s.
var lBytes = [32]byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}

// corruptions returns sig and msg as signed and in the ways an attacker or
// a fault could change them: a flipped bit in R, s or the message, s + L
// and s = L (non-canonical), s = 0, R replaced by a small-order encoding,
// R and s swapped, a signature by another key, and wrong lengths.
func corruptions(rng *rand.Rand, msg, sig []byte, other ed25519.PrivateKey) [][2][]byte {
	out := [][2][]byte{{msg, sig}}
	flip := func(i int) []byte {
		b := bytes.Clone(sig)
		b[i] ^= 1 << rng.IntN(8)
		return b
	}
	out = append(out, [2][]byte{msg, flip(rng.IntN(32))}, [2][]byte{msg, flip(32 + rng.IntN(32))})
	if len(msg) > 0 {
		m := bytes.Clone(msg)
		m[rng.IntN(len(m))] ^= 1
		out = append(out, [2][]byte{m, sig})
	}
	// s + L: the same scalar, non-canonical.
	var sPlusL [32]byte
	carry := 0
	for i := range 32 {
		v := int(sig[32+i]) + int(lBytes[i]) + carry
		sPlusL[i], carry = byte(v), v>>8
	}
	out = append(out,
		[2][]byte{msg, append(bytes.Clone(sig[:32]), sPlusL[:]...)},
		[2][]byte{msg, append(bytes.Clone(sig[:32]), lBytes[:]...)},
		[2][]byte{msg, append(bytes.Clone(sig[:32]), make([]byte, 32)...)},
		[2][]byte{msg, append(unhex(smallOrder[rng.IntN(len(smallOrder))]), sig[32:]...)},
		[2][]byte{msg, append(bytes.Clone(sig[32:]), sig[:32]...)},
		[2][]byte{msg, ed25519.Sign(other, msg)},
		[2][]byte{msg, sig[:63]},
		[2][]byte{msg, append(bytes.Clone(sig), 0)},
		[2][]byte{msg, nil},
	)
	return out
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// TestDifferential compares Table.Verify with ed25519consensus.Verify on
// random keys (tables of every width), messages of several lengths and
// their corruptions: some 12,000 cases in the full suite.
func TestDifferential(t *testing.T) {
	keys, perKey := 28, 30
	if testing.Short() {
		keys = 7
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var valid, invalid int
	for k := range keys {
		priv, other := newKey(rng), newKey(rng)
		pub := priv.Public().(ed25519.PublicKey)
		tb := mustTable(t, pub, minWindow+k%(MaxWindow-minWindow+1))
		for range perKey {
			msg := make([]byte, []int{0, 1, 32, 300, 1000}[rng.IntN(5)])
			fill(rng, msg)
			for _, c := range corruptions(rng, msg, ed25519.Sign(priv, msg), other) {
				if check(t, tb, pub, c[0], c[1], "differential") {
					valid++
				} else {
					invalid++
				}
			}
		}
	}
	t.Logf("%d valid, %d invalid cases", valid, invalid)
	if valid < keys*perKey || invalid < keys*perKey*8 {
		t.Fatalf("%d valid, %d invalid: the corruptions did not do what they should", valid, invalid)
	}
}

// TestAddMult checks the table arithmetic alone: addMult(P, k) = P + k·Q
// for edge scalars (0, 1, 2^(w-1), 2^w−1, L−1, 2^253−1 and every
// single bit) and random ones, at every width, against edwards25519's
// ScalarMult.
func TestAddMult(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	q := new(edwards25519.Point).ScalarBaseMult(randomScalar(rng))
	p := new(edwards25519.Point).ScalarBaseMult(randomScalar(rng))
	var ks [][32]byte
	lMinus1 := lBytes
	lMinus1[0]--
	max := [32]byte{}
	for i := range max {
		max[i] = 0xff
	}
	max[31] = 0x1f
	ks = append(ks, [32]byte{}, [32]byte{1}, lMinus1, max)
	for bit := range scalarBits {
		var k [32]byte
		k[bit/8] = 1 << (bit % 8)
		ks = append(ks, k)
	}
	for range 64 {
		var k [32]byte
		copy(k[:], randomScalar(rng).Bytes())
		ks = append(ks, k)
	}
	for w := minWindow; w <= MaxWindow; w++ {
		m := newMultiples(q, w)
		edge := [][32]byte{{byte(1 << (w - 1))}, {byte(1<<w - 1)}}
		for _, k := range append(edge, ks...) {
			got := new(edwards25519.Point).Set(p)
			m.addMult(got, &k)
			// k < 2^253 may exceed L: reduce it through a wide encoding.
			var wide [64]byte
			copy(wide[:], k[:])
			ks, _ := new(edwards25519.Scalar).SetUniformBytes(wide[:])
			want := new(edwards25519.Point).ScalarMult(ks, q)
			want.Add(want, p)
			if got.Equal(want) != 1 {
				t.Fatalf("width %d, k %x: addMult differs from ScalarMult", w, k)
			}
		}
	}
}

// TestRecodeRejectsWide: a scalar of 2^253 or more cannot be recoded
// without a carry out of the top window; recode refuses it loudly
// rather than compute a wrong multiple (Verify passes reduced scalars
// only).
func TestRecodeRejectsWide(t *testing.T) {
	var k [32]byte
	k[31] = 0x20
	defer func() {
		if recover() == nil {
			t.Fatal("recode accepted 2^253")
		}
	}()
	recode(make([]int16, windows(minWindow)), &k, minWindow)
}

// TestNewTableErrors: bad widths and keys are named errors.
func TestNewTableErrors(t *testing.T) {
	pub := newKey(rand.New(rand.NewPCG(5, 5))).Public().(ed25519.PublicKey)
	for _, w := range []int{0, 1, MaxWindow + 1} {
		if _, err := NewTableWindow(pub, w); err == nil {
			t.Errorf("width %d: no error", w)
		}
	}
	for _, p := range [][]byte{nil, pub[:31], append(bytes.Clone(pub), 0)} {
		if _, err := NewTable(p); err == nil {
			t.Errorf("key of %d bytes: no error", len(p))
		}
	}
	for y := byte(2); ; y++ { // the first small y with no x on the curve
		enc := append([]byte{y}, make([]byte, 31)...)
		if _, err := new(edwards25519.Point).SetBytes(enc); err == nil {
			continue
		}
		if _, err := NewTable(enc); err == nil {
			t.Errorf("y = %d is not a point, NewTable: no error", y)
		}
		break
	}
	for w := minWindow; w <= MaxWindow; w++ {
		if got := mustTable(t, pub, w).Size(); got != TableSize(w) {
			t.Errorf("width %d: Size %d, TableSize %d", w, got, TableSize(w))
		}
	}
}
