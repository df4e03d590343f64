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

// BenchmarkVerifyKeys verifies round-robin over several keys with pinned
// tables, as a peer does (two client keys, the peers', the orderer's):
// their tables together outgrow the core's caches, so each verification
// also pays for fetching its table entries.
func BenchmarkVerifyKeys(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	msg := make([]byte, 300)
	for _, keys := range []int{1, 8} {
		tabs := make([]*Table, keys)
		sigs := make([][]byte, keys)
		for i := range tabs {
			priv := newKey(rng)
			tabs[i] = mustTable(b, priv.Public().(ed25519.PublicKey), PinnedWindow)
			sigs[i] = ed25519.Sign(priv, msg)
		}
		baseTable()
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if !tabs[i].Verify(msg, sigs[i]) {
					b.Fatal("table rejects")
				}
				i = (i + 1) % keys
			}
		})
		// cold: other work (here a walk over 16 MiB) between two
		// verifications evicts the tables from the caches, as a node's
		// gRPC, decoding and storage work does.
		other := make([]byte, 16<<20)
		b.Run(fmt.Sprintf("keys=%d/cold", keys), func(b *testing.B) {
			i := 0
			for b.Loop() {
				b.StopTimer()
				for j := 0; j < len(other); j += 64 {
					other[j]++
				}
				b.StartTimer()
				if !tabs[i].Verify(msg, sigs[i]) {
					b.Fatal("table rejects")
				}
				i = (i + 1) % keys
			}
		})
	}
}
