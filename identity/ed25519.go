package identity

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"

	"filippo.io/edwards25519"
	"github.com/hdevalence/ed25519consensus"

	"github.com/strand-ledger/strand/identity/zip215"
)

// Ed25519 signatures are verified under ZIP-215's rules, by every node and
// on every path (orderer admission, endorser, gateway, committer, one by
// one or in a batch), never by crypto/ed25519:
//
//   - the signature is 64 bytes and its s is canonical (s < L);
//   - A (the public key) and R decode as curve points, non-canonical
//     encodings of y included;
//   - the cofactored equation [8](s·B − k·A − R) = 0 holds, with
//     k = SHA-512(R ‖ A ‖ M) reduced mod L.
//
// Why: batch verification is only sound with the cofactored equation; a
// peer that checks a block as a batch and one that checks it signature by
// signature must reach the same codes, and they do only if both use the
// same cofactored rule (single and batch agree by construction). crypto/
// ed25519 is cofactorless and rejects non-canonical encodings, so it
// differs on crafted signatures: those whose A or R has a small-order
// component, or is a non-canonical encoding. An honest signer never makes
// one (TestEd25519Wycheproof lists the Wycheproof cases that
// differ); they are accepted here, and by every peer alike. TLS keeps the
// standard library: it is not consensus.
//
// A third party cannot malleate a valid signature under this rule: s must
// be canonical, and another R (another encoding, or R plus a torsion
// point) changes k.

// verifyEd25519 is the single check of the rule.
func verifyEd25519(pub ed25519.PublicKey, msg, sig []byte) bool {
	return ed25519consensus.Verify(pub, msg, sig)
}

// edKey is a member's Ed25519 key decoded once: a is nil when the key
// does not decode as a point, and then no signature verifies.
type edKey struct {
	pub ed25519.PublicKey
	a   *edwards25519.Point
}

func newEdKey(pub ed25519.PublicKey) edKey {
	a, err := new(edwards25519.Point).SetBytes(pub)
	if err != nil {
		a = nil
	}
	return edKey{pub: pub, a: a}
}

// Batch checks Ed25519 signatures together, under the rule above: for
// random 128-bit z_i,
//
//	[8]( −(Σ z_i·s_i)·B + Σ z_i·R_i + Σ_A (Σ_{i signed by A} z_i·k_i)·A ) = 0.
//
// The A terms are summed per distinct key before the multiscalar
// multiplication, so a block whose signatures come from a few keys pays
// for one point per key instead of one per signature; the curve
// arithmetic is filippo.io/edwards25519's (ed25519consensus's batch is the
// same equation with one A term per signature; ed25519_test checks the
// two against each other and against single checks).
//
// If every added signature passes the single check, Verify returns true;
// if one fails it, Verify returns false except with probability about
// 2^-125. A Batch is not safe for concurrent use; Reset reuses it.
type Batch struct {
	rs    []edwards25519.Point
	zs    []edwards25519.Scalar
	keys  []batchKey
	index map[[ed25519.PublicKeySize]byte]int // keys by encoding
	bsum  edwards25519.Scalar                 // Σ z_i·s_i
	// scratch for Verify
	scalars []*edwards25519.Scalar
	points  []*edwards25519.Point
}

type batchKey struct {
	a    *edwards25519.Point
	coef edwards25519.Scalar // Σ z_i·k_i
}

// Len returns the number of signatures added since the last Reset.
func (b *Batch) Len() int { return len(b.rs) }

// Reset empties b.
func (b *Batch) Reset() {
	b.rs, b.zs, b.keys = b.rs[:0], b.zs[:0], b.keys[:0]
	clear(b.index)
	b.bsum = edwards25519.Scalar{}
}

// add checks what can be checked of one signature alone (its length, s
// canonical, R and A decoding) and returns false if that fails, as the
// single check would; otherwise it adds the signature to b.
func (b *Batch) add(k edKey, msg, sig []byte) bool {
	if k.a == nil {
		return false
	}
	sg, ok := zip215.Parse(k.pub, msg, sig)
	if !ok {
		return false
	}
	var zb [32]byte
	if _, err := rand.Read(zb[:16]); err != nil {
		panic(fmt.Sprintf("identity: crypto/rand: %v", err)) // cannot happen on Go 1.24+
	}
	var z edwards25519.Scalar
	if _, err := z.SetCanonicalBytes(zb[:]); err != nil {
		panic("identity: a 128-bit scalar is not canonical") // cannot happen
	}
	if b.index == nil {
		b.index = make(map[[ed25519.PublicKeySize]byte]int)
	}
	enc := [ed25519.PublicKeySize]byte(k.pub)
	i, ok := b.index[enc]
	if !ok {
		i = len(b.keys)
		b.keys = append(b.keys, batchKey{a: k.a})
		b.index[enc] = i
	}
	key := &b.keys[i]
	key.coef.MultiplyAdd(&z, &sg.K, &key.coef)
	b.bsum.MultiplyAdd(&z, &sg.S, &b.bsum)
	b.rs = append(b.rs, sg.R)
	b.zs = append(b.zs, z)
	return true
}

// Verify reports whether every signature added since the last Reset
// verifies (true for none). When it returns false, at least one does not;
// which, only single checks can tell.
func (b *Batch) Verify() bool {
	n := 1 + len(b.rs) + len(b.keys)
	if len(b.rs) == 0 {
		return true
	}
	b.scalars, b.points = b.scalars[:0], b.points[:0]
	var bcoef edwards25519.Scalar
	bcoef.Negate(&b.bsum)
	b.scalars = append(b.scalars, &bcoef)
	b.points = append(b.points, edwards25519.NewGeneratorPoint())
	for i := range b.rs {
		b.scalars = append(b.scalars, &b.zs[i])
		b.points = append(b.points, &b.rs[i])
	}
	for i := range b.keys {
		b.scalars = append(b.scalars, &b.keys[i].coef)
		b.points = append(b.points, b.keys[i].a)
	}
	if len(b.points) != n {
		panic("identity: batch terms miscounted")
	}
	check := new(edwards25519.Point).VarTimeMultiScalarMult(b.scalars, b.points)
	check.MultByCofactor(check)
	return check.Equal(edwards25519.NewIdentityPoint()) == 1
}
