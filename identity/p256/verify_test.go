package p256

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/big"
	mrand "math/rand/v2"
	"os"
	"testing"
)

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newTable(t testing.TB, pub *ecdsa.PublicKey) *Table {
	t.Helper()
	return newTableWindow(t, pub, Window)
}

func newTableWindow(t testing.TB, pub *ecdsa.PublicKey, w int) *Table {
	t.Helper()
	tb, err := NewTableWindow(pub, w)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// check fails the test when the table and crypto/ecdsa disagree, and
// returns their common answer.
func check(t testing.TB, tb *Table, pub *ecdsa.PublicKey, digest, sig []byte, what string) bool {
	t.Helper()
	want := ecdsa.VerifyASN1(pub, digest, sig)
	if got := tb.Verify(digest, sig); got != want {
		t.Fatalf("%s: Table.Verify = %v, ecdsa.VerifyASN1 = %v\ndigest %x\nsig %x", what, got, want, digest, sig)
	}
	return want
}

// TestDifferential compares Table.Verify with ecdsa.VerifyASN1 on random
// keys, digests of several lengths and signatures, valid and corrupted
// (a flipped bit in the DER bytes, a changed digest, r or s replaced by
// edge values, high-S twins, truncation and trailing bytes).
func TestDifferential(t *testing.T) {
	keys, perKey := 40, 60
	if testing.Short() {
		keys = 8
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	var valid, invalid int
	for k := 0; k < keys; k++ {
		priv := newKey(t)
		pub := &priv.PublicKey
		tb := newTableWindow(t, pub, []int{Window, PinnedWindow}[k%2]) // clients' and pinned keys' widths
		other := newKey(t)
		for i := 0; i < perKey; i++ {
			digest := make([]byte, []int{32, 32, 20, 48, 64, 0, 1}[rng.IntN(7)])
			fill(rng, digest)
			sig, err := ecdsa.SignASN1(rand.Reader, priv, digest)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range corruptions(rng, sig, digest, other) {
				if check(t, tb, pub, c.digest, c.sig, c.what) {
					valid++
				} else {
					invalid++
				}
			}
		}
	}
	if valid == 0 || invalid == 0 {
		t.Fatalf("%d valid and %d invalid cases: the test must see both", valid, invalid)
	}
	t.Logf("%d valid, %d invalid cases agreed", valid, invalid)
}

type tcase struct {
	what        string
	digest, sig []byte
}

// corruptions returns the signature itself and variants of it.
func corruptions(rng *mrand.Rand, sig, digest []byte, other *ecdsa.PrivateKey) []tcase {
	r, s := splitSig(sig)
	n := elliptic.P256().Params().N
	out := []tcase{{"valid", digest, sig}}
	flip := func(b []byte) []byte {
		c := append([]byte(nil), b...)
		if len(c) == 0 {
			return []byte{1}
		}
		i := rng.IntN(len(c))
		c[i] ^= 1 << rng.IntN(8)
		return c
	}
	out = append(out,
		tcase{"flipped DER bit", digest, flip(sig)},
		tcase{"flipped digest bit", flip(digest), sig},
		tcase{"flipped r bit", digest, derSig(flipBig(rng, r), s)},
		tcase{"flipped s bit", digest, derSig(r, flipBig(rng, s))},
		tcase{"high-S twin", digest, derSig(r, new(big.Int).Sub(n, s))},
		tcase{"r = 0", digest, derSig(big.NewInt(0), s)},
		tcase{"s = 0", digest, derSig(r, big.NewInt(0))},
		tcase{"r = N", digest, derSig(n, s)},
		tcase{"s = N", digest, derSig(r, n)},
		tcase{"r + N", digest, derSig(new(big.Int).Add(r, n), s)},
		tcase{"negative r", digest, derSig(new(big.Int).Neg(r), s)},
		tcase{"truncated", digest, sig[:len(sig)-1]},
		tcase{"trailing byte", digest, append(append([]byte(nil), sig...), 0)},
		tcase{"swapped r, s", digest, derSig(s, r)},
	)
	if os, err := ecdsa.SignASN1(rand.Reader, other, digest); err == nil {
		out = append(out, tcase{"other key's signature", digest, os})
	}
	return out
}

func splitSig(sig []byte) (r, s *big.Int) {
	rb, sb, ok := parseSignature(sig)
	if !ok {
		panic("stdlib signature does not parse")
	}
	return new(big.Int).SetBytes(rb), new(big.Int).SetBytes(sb)
}

func flipBig(rng *mrand.Rand, v *big.Int) *big.Int {
	c := new(big.Int).Set(v)
	bit := rng.IntN(256)
	return c.SetBit(c, bit, c.Bit(bit)^1)
}

// derSig encodes (r, s) with encoding/asn1's INTEGER rules (minimal two's
// complement, so a negative value stays negative on the wire).
func derSig(r, s *big.Int) []byte {
	enc := func(v *big.Int) []byte {
		var b []byte
		switch v.Sign() {
		case 0:
			b = []byte{0}
		case 1:
			b = v.Bytes()
			if b[0]&0x80 != 0 {
				b = append([]byte{0}, b...)
			}
		default: // two's complement of a negative value
			m := new(big.Int).Lsh(big.NewInt(1), uint(v.BitLen()/8+1)*8)
			b = m.Add(m, v).Bytes()
			for len(b) > 1 && b[0] == 0xff && b[1]&0x80 != 0 {
				b = b[1:]
			}
		}
		return append([]byte{0x02, byte(len(b))}, b...)
	}
	body := append(enc(r), enc(s)...)
	return append([]byte{0x30, byte(len(body))}, body...)
}

type wycheproofFile struct {
	NumberOfTests int
	TestGroups    []struct {
		PublicKey struct{ Uncompressed string }
		Sha       string
		Tests     []struct {
			TcID    int
			Comment string
			Msg     string
			Sig     string
			Result  string
		}
	}
}

// TestWycheproof runs every ECDSA P-256/SHA-256 case of Project Wycheproof:
// the table must give crypto/ecdsa's answer on each, and that answer must
// be Wycheproof's for valid and invalid cases (acceptable ones may go
// either way; the stdlib's answer is the rule).
func TestWycheproof(t *testing.T) {
	raw, err := os.ReadFile("testdata/wycheproof/ecdsa_secp256r1_sha256_test.json")
	if err != nil {
		t.Fatal(err)
	}
	var f wycheproofFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, g := range f.TestGroups {
		if g.Sha != "SHA-256" {
			t.Fatalf("group hash %q, expected SHA-256", g.Sha)
		}
		x, y := elliptic.Unmarshal(elliptic.P256(), unhex(t, g.PublicKey.Uncompressed))
		if x == nil {
			t.Fatalf("public key %s does not decode", g.PublicKey.Uncompressed)
		}
		pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: x, Y: y}
		tb, pinned := newTable(t, pub), newTableWindow(t, pub, PinnedWindow)
		for _, tc := range g.Tests {
			d := sha256.Sum256(unhex(t, tc.Msg))
			got := check(t, tb, pub, d[:], unhex(t, tc.Sig), tc.Comment)
			check(t, pinned, pub, d[:], unhex(t, tc.Sig), tc.Comment+" (pinned width)")
			switch {
			case tc.Result == "valid" && !got, tc.Result == "invalid" && got:
				t.Errorf("tcId %d (%s): verified %v, Wycheproof says %s", tc.TcID, tc.Comment, got, tc.Result)
			}
			ran++
		}
	}
	if ran != f.NumberOfTests {
		t.Fatalf("ran %d cases, the file has %d", ran, f.NumberOfTests)
	}
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRecode checks that the signed digits sum back to the scalar, for
// edge scalars and random ones, at every width.
func TestRecode(t *testing.T) {
	n := elliptic.P256().Params().N
	rng := mrand.New(mrand.NewPCG(3, 4))
	for w := minWindow; w <= MaxWindow; w++ {
		half := int64(1) << (w - 1)
		ks := []*big.Int{big.NewInt(0), big.NewInt(1), big.NewInt(half), big.NewInt(half + 1),
			new(big.Int).Sub(n, big.NewInt(1)), new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))}
		for i := 0; i < 1000; i++ {
			var b [32]byte
			fill(rng, b[:])
			ks = append(ks, new(big.Int).SetBytes(b[:]))
		}
		for _, k := range ks {
			var b [32]byte
			k.FillBytes(b[:])
			d := recode(make([]int16, windows(w)), &b, w)
			sum := new(big.Int)
			for i := len(d) - 1; i >= 0; i-- {
				if int64(d[i]) < -half || int64(d[i]) > half {
					t.Fatalf("width %d, k %x: digit %d = %d, out of [-%d, %d]", w, k, i, d[i], half, half)
				}
				sum.Lsh(sum, uint(w)).Add(sum, big.NewInt(int64(d[i])))
			}
			if sum.Cmp(k) != 0 {
				t.Fatalf("width %d, k %x: digits sum to %x", w, k, sum)
			}
		}
	}
}

// TestWindows checks every width against crypto/ecdsa on random keys and
// valid and corrupted signatures.
func TestWindows(t *testing.T) {
	for w := minWindow; w <= MaxWindow; w++ {
		priv := newKey(t)
		tb, err := NewTableWindow(&priv.PublicKey, w)
		if err != nil {
			t.Fatal(err)
		}
		if tb.Window() != w {
			t.Fatalf("width %d: table says %d", w, tb.Window())
		}
		if tb.Size() != TableSize(w) {
			t.Fatalf("width %d: table of %d bytes, TableSize says %d", w, tb.Size(), TableSize(w))
		}
		for i := 0; i < 20; i++ {
			d := sha256.Sum256([]byte{byte(w), byte(i)})
			sig, err := ecdsa.SignASN1(rand.Reader, priv, d[:])
			if err != nil {
				t.Fatal(err)
			}
			if !check(t, tb, &priv.PublicKey, d[:], sig, "valid") {
				t.Fatalf("width %d: a valid signature rejected", w)
			}
			d[i%32] ^= 1
			if check(t, tb, &priv.PublicKey, d[:], sig, "changed digest") {
				t.Fatalf("width %d: a changed digest accepted", w)
			}
		}
	}
	for _, w := range []int{minWindow - 1, MaxWindow + 1} {
		if _, err := NewTableWindow(&newKey(t).PublicKey, w); err == nil {
			t.Errorf("width %d: no error", w)
		}
	}
}

func TestNewTableRejects(t *testing.T) {
	if _, err := NewTable(nil); err == nil {
		t.Error("nil key: no error")
	}
	k := newKey(t)
	bad := &ecdsa.PublicKey{Curve: elliptic.P256(), X: k.X, Y: new(big.Int).Add(k.Y, big.NewInt(1))}
	if _, err := NewTable(bad); err == nil {
		t.Error("point off the curve: no error")
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, err := NewTable(&p384.PublicKey); err == nil {
		t.Error("P-384 key: no error")
	}
}

func fill(rng *mrand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}
