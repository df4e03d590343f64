package zip215

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"testing"

	"filippo.io/edwards25519"
	"github.com/hdevalence/ed25519consensus"
)

func newKey(rng *rand.Rand) ed25519.PrivateKey {
	var seed [32]byte
	fill(rng, seed[:])
	return ed25519.NewKeyFromSeed(seed[:])
}

func fill(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

func mustTable(t testing.TB, pub []byte, w int) *Table {
	t.Helper()
	tb, err := NewTableWindow(pub, w)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// check fails the test when the table and ed25519consensus.Verify
// disagree, and returns their common answer.
func check(t testing.TB, tb *Table, pub, msg, sig []byte, what string) bool {
	t.Helper()
	want := ed25519consensus.Verify(pub, msg, sig)
	if got := tb.Verify(msg, sig); got != want {
		t.Fatalf("%s: Table.Verify = %v, ed25519consensus.Verify = %v (width %d)\npub %x\nmsg %x\nsig %x",
			what, got, want, tb.Window(), pub, msg, sig)
	}
	return want
}

// smallOrder is every encoding of a point of small order that
// edwards25519 decodes: the 8 torsion points canonically, and the
// non-canonical encodings of some (y >= p, or x = 0 with its sign bit
// set). ZIP-215's 196 test vectors are their pairs as A and R with s = 0.
var smallOrder = []string{
	"0100000000000000000000000000000000000000000000000000000000000000",
	"0100000000000000000000000000000000000000000000000000000000000080",
	"0000000000000000000000000000000000000000000000000000000000000000",
	"0000000000000000000000000000000000000000000000000000000000000080",
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
}

// TestZIP215Vectors runs ZIP-215's 196 cases (every small-order encoding
// as A and as R, s = 0, message "Zcash"): all are valid under the rule,
// for tables of every width. Then each small-order A with random R, s and
// messages, where both must agree (and reject nearly always).
func TestZIP215Vectors(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for i, a := range smallOrder {
		pub := mustHex(t, a)
		tb := mustTable(t, pub, minWindow+i%(MaxWindow-minWindow+1))
		for _, r := range smallOrder {
			sig := append(mustHex(t, r), make([]byte, 32)...)
			if !check(t, tb, pub, []byte("Zcash"), sig, "zip215 vector") {
				t.Fatalf("A %s, R %s: rejected, ZIP-215 says valid", a, r)
			}
		}
		for range 40 {
			msg := make([]byte, rng.IntN(40))
			fill(rng, msg)
			sig := make([]byte, 64)
			fill(rng, sig)
			sig[63] &= 0x0f // s canonical
			check(t, tb, pub, msg, sig, "small-order A, random signature")
			copy(sig, mustHex(t, smallOrder[rng.IntN(len(smallOrder))]))
			check(t, tb, pub, msg, sig, "small-order A and R, random s")
		}
	}
}

// TestNonCanonicalKeys builds tables for every encoding with y >= p (y =
// p+0 .. p+18, both signs) that edwards25519 decodes, and requires the
// same answers as ed25519consensus on random and small-order signatures;
// encodings that do not decode must have no table.
func TestNonCanonicalKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	decoded := 0
	for y := range 19 {
		for _, sign := range []byte{0, 0x80} {
			pub := mustHex(t, "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")
			pub[0] += byte(y)
			pub[31] |= sign
			_, err := new(edwards25519.Point).SetBytes(pub)
			tb, terr := NewTableWindow(pub, 2+y%7)
			if (err == nil) != (terr == nil) {
				t.Fatalf("pub %x: SetBytes error %v, NewTable error %v", pub, err, terr)
			}
			if terr != nil {
				if ed25519consensus.Verify(pub, []byte("m"), make([]byte, 64)) {
					t.Fatalf("pub %x does not decode, yet ed25519consensus accepts", pub)
				}
				continue
			}
			decoded++
			for range 20 {
				msg := make([]byte, 8)
				fill(rng, msg)
				sig := make([]byte, 64)
				fill(rng, sig)
				sig[63] &= 0x0f
				check(t, tb, pub, msg, sig, "non-canonical A")
				copy(sig, mustHex(t, smallOrder[rng.IntN(len(smallOrder))]))
				check(t, tb, pub, msg, sig, "non-canonical A, small-order R")
				clear(sig[32:])
				check(t, tb, pub, msg, sig, "non-canonical A, small-order R, s = 0")
			}
		}
	}
	if decoded < 4 {
		t.Fatalf("only %d non-canonical encodings decoded; the test covers too little", decoded)
	}
}

type edWycheproof struct {
	TestGroups []struct {
		PublicKey struct {
			PK string `json:"pk"`
		} `json:"publicKey"`
		Tests []struct {
			TcID    int    `json:"tcId"`
			Comment string `json:"comment"`
			Msg     string `json:"msg"`
			Sig     string `json:"sig"`
			Result  string `json:"result"`
		} `json:"tests"`
	} `json:"testGroups"`
}

// TestWycheproof runs every Project Wycheproof Ed25519 case (the identity
// package's copy, ../testdata/wycheproof, Apache-2.0) through tables of
// every width and requires ed25519consensus.Verify's answer in each; the
// identity package's TestEd25519Wycheproof relates that answer to
// Wycheproof's.
func TestWycheproof(t *testing.T) {
	raw, err := os.ReadFile("../testdata/wycheproof/ed25519_test.json")
	if err != nil {
		t.Fatal(err)
	}
	var f edWycheproof
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	n, valid := 0, 0
	for _, g := range f.TestGroups {
		pub := mustHex(t, g.PublicKey.PK)
		for w := minWindow; w <= MaxWindow; w++ {
			tb := mustTable(t, pub, w)
			for _, c := range g.Tests {
				n++
				if check(t, tb, pub, mustHex(t, c.Msg), mustHex(t, c.Sig), "wycheproof "+c.Comment) {
					valid++
				}
			}
		}
	}
	widths := MaxWindow - minWindow + 1
	if n != 151*widths || valid == 0 || valid == n {
		t.Fatalf("ran %d cases (%d valid), want 151 at each of %d widths, valid and invalid", n, valid, widths)
	}
}

// signTorsion signs msg for the key a·B + tA with nonce point r·B + tR,
// where tA and tR are small-order points: valid under ZIP-215's
// cofactored rule, rejected by the cofactorless one in most cases.
func signTorsion(a, r *edwards25519.Scalar, tA, tR *edwards25519.Point, msg []byte) (pub, sig []byte) {
	A := new(edwards25519.Point).ScalarBaseMult(a)
	pub = A.Add(A, tA).Bytes()
	R := new(edwards25519.Point).ScalarBaseMult(r)
	rb := R.Add(R, tR).Bytes()
	h := sha512.New()
	h.Write(rb)
	h.Write(pub)
	h.Write(msg)
	k, _ := new(edwards25519.Scalar).SetUniformBytes(h.Sum(nil))
	s := new(edwards25519.Scalar).MultiplyAdd(k, a, r)
	return pub, append(rb, s.Bytes()...)
}

func randomScalar(rng *rand.Rand) *edwards25519.Scalar {
	var b [64]byte
	fill(rng, b[:])
	s, _ := new(edwards25519.Scalar).SetUniformBytes(b[:])
	return s
}

// TestTorsion: keys and nonces with a small-order component sign valid
// ZIP-215 signatures; tables agree with ed25519consensus on them and on
// their corruptions, and crypto/ed25519 rejects some (so the cases reach
// the cofactor).
func TestTorsion(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	stdRejects := 0
	for i := range 24 {
		a := randomScalar(rng)
		tA, _ := new(edwards25519.Point).SetBytes(mustHex(t, smallOrder[rng.IntN(len(smallOrder))]))
		tR, _ := new(edwards25519.Point).SetBytes(mustHex(t, smallOrder[rng.IntN(len(smallOrder))]))
		msg := []byte{byte(i), 't'}
		pub, sig := signTorsion(a, randomScalar(rng), tA, tR, msg)
		tb := mustTable(t, pub, minWindow+i%(MaxWindow-minWindow+1))
		if !check(t, tb, pub, msg, sig, "torsion signature") {
			t.Fatalf("case %d: torsion signature rejected, want valid", i)
		}
		if !ed25519.Verify(pub, msg, sig) {
			stdRejects++
		}
		for j := range 8 {
			bad := bytes.Clone(sig)
			bad[rng.IntN(64)] ^= 1 << rng.IntN(8)
			check(t, tb, pub, msg, bad, "corrupted torsion signature")
			check(t, tb, pub, append(bytes.Clone(msg), byte(j)), sig, "torsion signature, other message")
		}
	}
	if stdRejects == 0 {
		t.Fatal("crypto/ed25519 accepted every torsion signature; the cases never reach the cofactor")
	}
}
