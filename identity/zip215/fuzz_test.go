package zip215

import (
	"crypto/ed25519"
	"math/rand/v2"
	"sync"
	"testing"

	"filippo.io/edwards25519"
	"github.com/hdevalence/ed25519consensus"
)

// fuzzKeys are the keys FuzzVerify picks from: an honest key whose seeds
// are valid signatures (so the fuzzer starts from accepted inputs), a key
// with a small-order component, and two small-order keys, one of them a
// non-canonical encoding; each at the default and the pinned width.
var fuzzKeys = sync.OnceValue(func() []*Table {
	rng := rand.New(rand.NewPCG(12, 12))
	pubs := [][]byte{
		fuzzPriv.Public().(ed25519.PublicKey),
		torsionPub(rng),
		unhex(smallOrder[4]),
		unhex(smallOrder[13]),
	}
	var ts []*Table
	for _, p := range pubs {
		for _, w := range []int{Window, PinnedWindow} {
			t, err := NewTableWindow(p, w)
			if err != nil {
				panic(err)
			}
			ts = append(ts, t)
		}
	}
	return ts
})

var fuzzPriv = newKey(rand.New(rand.NewPCG(13, 13)))

func torsionPub(rng *rand.Rand) []byte {
	tA, _ := new(edwards25519.Point).SetBytes(unhex(smallOrder[6]))
	pub, _ := signTorsion(randomScalar(rng), randomScalar(rng), tA, tA, nil)
	return pub
}

// FuzzVerify compares Table.Verify with ed25519consensus.Verify on
// arbitrary messages and signature bytes under the fixed keys above.
func FuzzVerify(f *testing.F) {
	for _, m := range []string{"", "a", "strand"} {
		f.Add(uint8(0), []byte(m), ed25519.Sign(fuzzPriv, []byte(m)))
		f.Add(uint8(1), []byte(m), ed25519.Sign(fuzzPriv, []byte(m)))
	}
	f.Add(uint8(4), []byte("Zcash"), append(unhex(smallOrder[5]), make([]byte, 32)...))
	f.Add(uint8(6), []byte("Zcash"), append(unhex(smallOrder[11]), make([]byte, 32)...))
	f.Fuzz(func(t *testing.T, key uint8, msg, sig []byte) {
		ts := fuzzKeys()
		tb := ts[int(key)%len(ts)]
		check(t, tb, tb.pub[:], msg, sig, "fuzz")
	})
}

// FuzzKey builds a table (width 2, cheap to build) from arbitrary key
// bytes and compares it with ed25519consensus.Verify: the key's decoding
// (non-canonical encodings, points not on the curve) must agree too.
func FuzzKey(f *testing.F) {
	pub := fuzzPriv.Public().(ed25519.PublicKey)
	f.Add([]byte(pub), []byte("m"), ed25519.Sign(fuzzPriv, []byte("m")))
	for _, s := range smallOrder[:4] {
		f.Add(unhex(s), []byte("Zcash"), append(unhex(s), make([]byte, 32)...))
	}
	f.Fuzz(func(t *testing.T, pub, msg, sig []byte) {
		tb, err := NewTableWindow(pub, minWindow)
		if err != nil {
			if len(pub) == ed25519.PublicKeySize && len(sig) == ed25519.SignatureSize {
				// No table: ed25519consensus must reject every
				// signature under this key; try the one given.
				if ed25519consensus.Verify(pub, msg, sig) {
					t.Fatalf("pub %x: NewTable says %v, ed25519consensus accepts a signature", pub, err)
				}
			}
			return
		}
		check(t, tb, pub, msg, sig, "fuzz key")
	})
}
