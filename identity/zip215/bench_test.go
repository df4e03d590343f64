package zip215

import (
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"testing"

	"filippo.io/edwards25519"
	"github.com/hdevalence/ed25519consensus"
)

// BenchmarkVerify compares ed25519consensus.Verify (strand's single check
// without a table) with Table.Verify at the default and pinned widths on
// one key and a 300-byte message, and measures building a table.
func BenchmarkVerify(b *testing.B) {
	priv := newKey(rand.New(rand.NewPCG(1, 1)))
	pub := priv.Public().(ed25519.PublicKey)
	msg := make([]byte, 300)
	sig := ed25519.Sign(priv, msg)
	baseTable()
	b.Run("stock", func(b *testing.B) {
		for b.Loop() {
			if !ed25519consensus.Verify(pub, msg, sig) {
				b.Fatal("stock rejects")
			}
		}
	})
	for _, w := range []int{Window, PinnedWindow} {
		tb := mustTable(b, pub, w)
		b.Run(fmt.Sprintf("table/w=%d", w), func(b *testing.B) {
			for b.Loop() {
				if !tb.Verify(msg, sig) {
					b.Fatal("table rejects")
				}
			}
		})
		b.Run(fmt.Sprintf("build/w=%d", w), func(b *testing.B) {
			for b.Loop() {
				mustTable(b, pub, w)
			}
			b.ReportMetric(float64(tb.Size()), "bytes/key")
		})
	}
}

// BenchmarkWindows measures the parts a width decides: k·(−A) through a
// table of each width (the per-key cost), s·B through the base table at
// each width and through edwards25519's constant-time ScalarBaseMult (the
// fixed cost), and the whole Table.Verify and a table's build at each key
// width.
func BenchmarkWindows(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	priv := newKey(rng)
	pub := priv.Public().(ed25519.PublicKey)
	msg := make([]byte, 300)
	sig := ed25519.Sign(priv, msg)
	var kb [32]byte
	var seed [64]byte
	for i := range seed {
		seed[i] = byte(rng.Uint32())
	}
	k, _ := new(edwards25519.Scalar).SetUniformBytes(seed[:])
	copy(kb[:], k.Bytes())
	b.Run("sB/ScalarBaseMult", func(b *testing.B) {
		var p edwards25519.Point
		for b.Loop() {
			p.ScalarBaseMult(k)
		}
	})
	for w := 4; w <= MaxWindow; w++ {
		a, _ := new(edwards25519.Point).SetBytes(pub)
		m := newMultiples(a, w)
		b.Run(fmt.Sprintf("mult/w=%d", w), func(b *testing.B) {
			for b.Loop() {
				m.addMult(edwards25519.NewIdentityPoint(), &kb)
			}
			b.ReportMetric(float64(len(m.points)*pointBytes), "bytes")
		})
		tb := mustTable(b, pub, w)
		b.Run(fmt.Sprintf("verify/w=%d", w), func(b *testing.B) {
			for b.Loop() {
				if !tb.Verify(msg, sig) {
					b.Fatal("rejects")
				}
			}
		})
		b.Run(fmt.Sprintf("build/w=%d", w), func(b *testing.B) {
			for b.Loop() {
				mustTable(b, pub, w)
			}
		})
	}
}
