package p256

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"math/big"
	"testing"

	"filippo.io/nistec"
)

// BenchmarkWindows measures u2·Q, a whole verification and building the
// table at each width, with the table's bytes.
func BenchmarkWindows(b *testing.B) {
	priv := newKey(b)
	d := sha256.Sum256([]byte("strand"))
	sig, _ := ecdsa.SignASN1(rand.Reader, priv, d[:])
	var k [32]byte
	rand.Read(k[:])
	for w := 4; w <= MaxWindow; w++ {
		tb, err := NewTableWindow(&priv.PublicKey, w)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("w%d/mult", w), func(b *testing.B) {
			p := nistec.NewP256Point()
			for b.Loop() {
				tb.mult(p, &k)
			}
			b.ReportMetric(float64(tb.Size()), "bytes/key")
		})
		b.Run(fmt.Sprintf("w%d/verify", w), func(b *testing.B) {
			for b.Loop() {
				if !tb.Verify(d[:], sig) {
					b.Fatal("rejects")
				}
			}
		})
		b.Run(fmt.Sprintf("w%d/build", w), func(b *testing.B) {
			for b.Loop() {
				if _, err := NewTableWindow(&priv.PublicKey, w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParts splits one verification's cost into its steps.
func BenchmarkParts(b *testing.B) {
	priv := newKey(b)
	d := sha256.Sum256([]byte("strand"))
	sig, _ := ecdsa.SignASN1(rand.Reader, priv, d[:])
	tb := newTable(b, &priv.PublicKey)
	var k [32]byte
	rand.Read(k[:])
	b.Run("basemult", func(b *testing.B) {
		p := nistec.NewP256Point()
		for b.Loop() {
			p.ScalarBaseMult(k[:])
		}
	})
	b.Run("tablemult", func(b *testing.B) {
		p := nistec.NewP256Point()
		for b.Loop() {
			tb.mult(p, &k)
		}
	})
	b.Run("add", func(b *testing.B) {
		p := nistec.NewP256Point()
		p.ScalarBaseMult(k[:])
		q := nistec.NewP256Point().Set(p)
		for b.Loop() {
			p.Add(p, q)
		}
	})
	b.Run("bytesx", func(b *testing.B) {
		p := nistec.NewP256Point()
		p.ScalarBaseMult(k[:])
		for b.Loop() {
			p.BytesX()
		}
	})
	b.Run("modinverse", func(b *testing.B) {
		var s, w big.Int
		s.SetBytes(k[:])
		for b.Loop() {
			w.ModInverse(&s, n)
		}
	})
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			tb.Verify(d[:], sig)
		}
	})
}
