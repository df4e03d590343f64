package identity

import (
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hdevalence/ed25519consensus"
)

// BenchmarkEd25519 measures one Ed25519 check per op: crypto/ed25519,
// strand's single check (ed25519consensus.Verify), and batches of n
// signatures (per op: one signature of the batch) through
// ed25519consensus's BatchVerifier and strand's Batch, whose A terms are
// summed per key: keys=3 is a block's usual few signers (two endorsing
// peers and a client), keys=n every signature by a key of its own.
func BenchmarkEd25519(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	msg := make([]byte, 300)
	keys := edKeys(b, rng, 256)
	sig := ed25519.Sign(keys[0], msg)
	pub := keys[0].Public().(ed25519.PublicKey)
	b.Run("stdlib", func(b *testing.B) {
		for b.Loop() {
			if !ed25519.Verify(pub, msg, sig) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("zip215", func(b *testing.B) {
		for b.Loop() {
			if !verifyEd25519(pub, msg, sig) {
				b.Fatal("invalid")
			}
		}
	})
	for _, n := range []int{1, 16, 64, 256} {
		for _, nk := range []int{3, n} {
			if nk > n {
				continue
			}
			cs := make([]edCase, n)
			for i := range cs {
				k := keys[i%nk]
				cs[i] = edCase{key: newEdKey(k.Public().(ed25519.PublicKey)), msg: msg, sig: ed25519.Sign(k, msg)}
			}
			b.Run(fmt.Sprintf("library-batch/n=%d/keys=%d", n, nk), func(b *testing.B) {
				for b.Loop() {
					v := ed25519consensus.NewPreallocatedBatchVerifier(n)
					for _, c := range cs {
						v.Add(c.key.pub, c.msg, c.sig)
					}
					if !v.Verify() {
						b.Fatal("invalid")
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e3, "µs/sig")
			})
			b.Run(fmt.Sprintf("strand-batch/n=%d/keys=%d", n, nk), func(b *testing.B) {
				var bt Batch
				for b.Loop() {
					bt.Reset()
					for _, c := range cs {
						bt.add(c.key, c.msg, c.sig)
					}
					if !bt.Verify() {
						b.Fatal("invalid")
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e3, "µs/sig")
			})
		}
	}
}
