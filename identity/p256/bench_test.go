package p256

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"testing"
)

// BenchmarkVerify compares the standard library's VerifyASN1 with
// Table.Verify on one key, and measures building a table.
func BenchmarkVerify(b *testing.B) {
	priv := newKey(b)
	d := sha256.Sum256([]byte("strand"))
	sig, err := ecdsa.SignASN1(rand.Reader, priv, d[:])
	if err != nil {
		b.Fatal(err)
	}
	tb := newTable(b, &priv.PublicKey)
	b.Run("stdlib", func(b *testing.B) {
		for b.Loop() {
			if !ecdsa.VerifyASN1(&priv.PublicKey, d[:], sig) {
				b.Fatal("stdlib rejects")
			}
		}
	})
	b.Run("table", func(b *testing.B) {
		for b.Loop() {
			if !tb.Verify(d[:], sig) {
				b.Fatal("table rejects")
			}
		}
	})
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			newTable(b, &priv.PublicKey)
		}
		b.ReportMetric(float64(tb.Size()), "bytes/key")
	})
}
