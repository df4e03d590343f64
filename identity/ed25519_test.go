package identity

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

	"github.com/strand-ledger/strand/identity/zip215"
)

// zip215Accepts lists the Wycheproof cases marked invalid that strand's
// rule (ZIP-215) accepts, by tcId. Every other case gets Wycheproof's
// answer.
var zip215Accepts = map[int]string{
	// R = (0, 1) encoded with x's sign bit set: a non-canonical encoding
	// of the identity, which ZIP-215 decodes (x = 0 ignores the sign).
	151: "non-canonical R: y = 1 with the sign of x set",
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

// TestEd25519Wycheproof runs every Wycheproof Ed25519 case through the
// single check, a batch of one and the key's precomputed tables at the
// default and pinned widths (identity/zip215), and requires one answer
// from all four, Wycheproof's except for the cases zip215Accepts lists,
// where crypto/ed25519 must say invalid and strand valid.
func TestEd25519Wycheproof(t *testing.T) {
	raw, err := os.ReadFile("testdata/wycheproof/ed25519_test.json")
	if err != nil {
		t.Fatal(err)
	}
	var f edWycheproof
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	n, differ := 0, 0
	var b Batch
	for _, g := range f.TestGroups {
		pub := mustHex(t, g.PublicKey.PK)
		key := newEdKey(pub)
		var tabs []*zip215.Table
		for _, w := range []int{zip215.Window, zip215.PinnedWindow} {
			tab, err := zip215.NewTableWindow(pub, w)
			if err != nil {
				t.Fatal(err)
			}
			tabs = append(tabs, tab)
		}
		for _, c := range g.Tests {
			n++
			msg, sig := mustHex(t, c.Msg), mustHex(t, c.Sig)
			got := verifyEd25519(pub, msg, sig)
			b.Reset()
			batch := b.add(key, msg, sig) && b.Verify()
			if batch != got {
				t.Errorf("tcId %d (%s): batch of one says %v, single %v", c.TcID, c.Comment, batch, got)
			}
			for _, tab := range tabs {
				if v := tab.Verify(msg, sig); v != got {
					t.Errorf("tcId %d (%s): %d-bit table says %v, single %v", c.TcID, c.Comment, tab.Window(), v, got)
				}
			}
			want := c.Result == "valid"
			if why, ok := zip215Accepts[c.TcID]; ok {
				differ++
				if want || !got || ed25519.Verify(pub, msg, sig) {
					t.Errorf("tcId %d (%s, listed: %s): wycheproof %s, strand %v, crypto/ed25519 %v; want invalid, true, false",
						c.TcID, c.Comment, why, c.Result, got, ed25519.Verify(pub, msg, sig))
				}
				continue
			}
			if got != want {
				t.Errorf("tcId %d (%s): strand says %v, wycheproof %s", c.TcID, c.Comment, got, c.Result)
			}
		}
	}
	if n != 151 || differ != len(zip215Accepts) {
		t.Fatalf("ran %d cases (%d listed as differing), want 151 (%d)", n, differ, len(zip215Accepts))
	}
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edCase is one signature of the differential tests and whether the
// single check accepts it.
type edCase struct {
	key      edKey
	msg, sig []byte
	ok       bool
}

// randomEdCases signs random messages with a few random keys and corrupts
// about a third of the signatures (a flipped bit in R, in s or in the
// message, or a signature by another key).
func randomEdCases(t testing.TB, rng *rand.Rand, keys []ed25519.PrivateKey, n int) []edCase {
	cs := make([]edCase, n)
	for i := range cs {
		k := keys[rng.IntN(len(keys))]
		msg := make([]byte, rng.IntN(200))
		for j := range msg {
			msg[j] = byte(rng.Uint32())
		}
		sig := ed25519.Sign(k, msg)
		switch rng.IntN(12) {
		case 0:
			sig[rng.IntN(32)] ^= 1 << rng.IntN(8)
		case 1:
			sig[32+rng.IntN(32)] ^= 1 << rng.IntN(8)
		case 2:
			if len(msg) > 0 {
				msg[rng.IntN(len(msg))] ^= 1
			}
		case 3:
			sig = ed25519.Sign(keys[rng.IntN(len(keys))], msg)
		}
		pub := k.Public().(ed25519.PublicKey)
		c := edCase{key: newEdKey(pub), msg: msg, sig: sig, ok: verifyEd25519(pub, msg, sig)}
		if std := ed25519.Verify(pub, msg, sig); std != c.ok {
			t.Fatalf("case %d: strand %v, crypto/ed25519 %v on an honest key and a random corruption", i, c.ok, std)
		}
		cs[i] = c
	}
	return cs
}

func edKeys(t testing.TB, rng *rand.Rand, n int) []ed25519.PrivateKey {
	keys := make([]ed25519.PrivateKey, n)
	for i := range keys {
		var seed [32]byte
		for j := range seed {
			seed[j] = byte(rng.Uint32())
		}
		keys[i] = ed25519.NewKeyFromSeed(seed[:])
	}
	return keys
}

// checkBatch verifies cs as one batch, strand's and ed25519consensus's,
// and requires both to say whether every single check passes.
func checkBatch(t testing.TB, b *Batch, cs []edCase) {
	t.Helper()
	b.Reset()
	lib := ed25519consensus.NewBatchVerifier()
	all, added := true, true
	for _, c := range cs {
		all = all && c.ok
		added = b.add(c.key, c.msg, c.sig) && added
		lib.Add(c.key.pub, c.msg, c.sig)
	}
	got := added && b.Verify()
	if got != all {
		t.Fatalf("batch of %d says %v, single checks %v", len(cs), got, all)
	}
	if len(cs) > 0 && lib.Verify() != all {
		t.Fatalf("ed25519consensus's batch of %d says %v, single checks %v", len(cs), !all, all)
	}
}

// TestEd25519Differential compares the single check with crypto/ed25519
// on random keys, messages and corruptions, and batches of random sizes
// with the single checks and ed25519consensus's batch.
func TestEd25519Differential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := edKeys(t, rng, 5)
	var b Batch
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	for range rounds {
		cs := randomEdCases(t, rng, keys, 1+rng.IntN(20))
		if rng.IntN(2) == 0 { // often all valid, so that true is tested too
			valid := cs[:0]
			for _, c := range cs {
				if c.ok {
					valid = append(valid, c)
				}
			}
			cs = valid
		}
		checkBatch(t, &b, cs)
	}
}

// torsionSigned signs msg under ZIP-215 for the public key A+T, where a is
// A's secret scalar and T a point of order 8: valid under strand's
// cofactored rule, and under crypto/ed25519's only when 8 divides k.
func torsionSigned(t testing.TB, a *edwards25519.Scalar, torsion []byte, msg []byte) (pub, sig []byte) {
	tp, err := new(edwards25519.Point).SetBytes(torsion)
	if err != nil {
		t.Fatal(err)
	}
	A := new(edwards25519.Point).ScalarBaseMult(a)
	pub = new(edwards25519.Point).Add(A, tp).Bytes()
	var seed [64]byte
	copy(seed[:], msg)
	r, _ := new(edwards25519.Scalar).SetUniformBytes(sha512.New().Sum(seed[:0])[:64])
	R := new(edwards25519.Point).ScalarBaseMult(r).Bytes()
	h := sha512.New()
	h.Write(R)
	h.Write(pub)
	h.Write(msg)
	k, _ := new(edwards25519.Scalar).SetUniformBytes(h.Sum(nil))
	s := new(edwards25519.Scalar).MultiplyAdd(k, a, r)
	return pub, append(R, s.Bytes()...)
}

// order8 is a point of order 8 (ZIP-215's list of small-order encodings).
const order8 = "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"

// TestEd25519Torsion is the edge the rule exists for: keys with a
// small-order component. Their signatures are valid under strand's rule
// (single and batch alike) while crypto/ed25519 rejects most of them,
// and a batch that mixes them with honest and corrupted signatures still
// says exactly what the single checks say.
func TestEd25519Torsion(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a, _ := new(edwards25519.Scalar).SetUniformBytes(bytes.Repeat([]byte{7}, 64))
	var b Batch
	stdRejects := 0
	var tors []edCase
	for i := range 16 {
		msg := []byte{byte(i), 'm'}
		pub, sig := torsionSigned(t, a, mustHex(t, order8), msg)
		if !verifyEd25519(pub, msg, sig) {
			t.Fatalf("torsion signature %d: strand rejects it, want accepted (cofactored rule)", i)
		}
		if !ed25519.Verify(pub, msg, sig) {
			stdRejects++
		}
		tors = append(tors, edCase{key: newEdKey(pub), msg: msg, sig: sig, ok: true})
	}
	if stdRejects == 0 {
		t.Fatal("crypto/ed25519 accepted every torsion signature; the test shows no difference")
	}
	keys := edKeys(t, rng, 3)
	for range 100 {
		cs := append(randomEdCases(t, rng, keys, rng.IntN(10)), tors[:1+rng.IntN(len(tors))]...)
		rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
		checkBatch(t, &b, cs)
	}
}

// FuzzEd25519Batch checks that a batch says exactly what the single
// checks say, on signatures the fuzzer corrupts: data XORs into a valid
// batch of four signatures by two keys (message and signature bytes).
func FuzzEd25519Batch(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add([]byte{1}, uint8(3))
	f.Add(bytes.Repeat([]byte{0xff}, 64), uint8(200))
	rng := rand.New(rand.NewPCG(5, 6))
	keys := edKeys(f, rng, 2)
	f.Fuzz(func(t *testing.T, data []byte, at uint8) {
		var cs []edCase
		for i := range 4 {
			k := keys[i%2]
			msg := []byte{byte(i), 'f', 'u', 'z', 'z'}
			cs = append(cs, edCase{key: newEdKey(k.Public().(ed25519.PublicKey)), msg: msg, sig: ed25519.Sign(k, msg)})
		}
		c := &cs[int(at)%4]
		for i, d := range data {
			if i < 64 {
				c.sig[i] ^= d
			} else {
				c.msg = append(c.msg, d)
			}
		}
		for i := range cs {
			cs[i].ok = verifyEd25519(cs[i].key.pub, cs[i].msg, cs[i].sig)
		}
		var b Batch
		checkBatch(t, &b, cs)
	})
}

// TestEd25519MemberTables checks Member.Verify for an Ed25519 client
// along its key's life (no table, a default-width table, a widened one)
// and for a pinned peer against the single check on random messages and
// corruptions: the table changes the cost, never the answer.
func TestEd25519MemberTables(t *testing.T) {
	f := newFixture(t)
	f.reg.keys.widenAfter = 50
	rng := rand.New(rand.NewPCG(21, 22))
	client := mustIssue(t, f.caEd, "client", RoleClient, Ed25519)
	peer := mustIssue(t, f.caEd, "peer", RolePeer, Ed25519)
	other := mustIssue(t, f.caEd, "other", RoleClient, Ed25519)
	widths := map[int]int{}
	for _, s := range []*Signer{client, peer} {
		m, err := f.reg.Member(s.Identity())
		if err != nil {
			t.Fatal(err)
		}
		for i := range 400 {
			msg := make([]byte, rng.IntN(300))
			for j := range msg {
				msg[j] = byte(rng.Uint32())
			}
			sig, _ := s.Sign(msg)
			switch i % 5 {
			case 1:
				sig[rng.IntN(64)] ^= 1 << rng.IntN(8)
			case 2:
				sig, _ = other.Sign(msg)
			case 3:
				if len(msg) > 0 {
					msg[0] ^= 1
				}
			}
			want := verifyEd25519(m.ed.pub, msg, sig)
			if err := m.Verify(msg, sig); (err == nil) != want {
				t.Fatalf("%s, check %d: Member.Verify %v, single check %v", m.Name, i, err, want)
			}
			if tab := m.tab.Load(); tab != nil {
				widths[tab.Window()]++
			} else {
				widths[0]++
			}
		}
	}
	if widths[0] == 0 || widths[zip215.Window] == 0 || widths[zip215.PinnedWindow] == 0 {
		t.Fatalf("checks by table width %v: expected some without a table, some at %d and at %d bits", widths, zip215.Window, zip215.PinnedWindow)
	}
}
