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

func TestVerifyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	priv := newKey(t)
	d := sha256.Sum256([]byte("strand"))
	sig, _ := ecdsa.SignASN1(rand.Reader, priv, d[:])
	tb := newTable(t, &priv.PublicKey)
	std := testing.AllocsPerRun(200, func() { ecdsa.VerifyASN1(&priv.PublicKey, d[:], sig) })
	got := testing.AllocsPerRun(200, func() { tb.Verify(d[:], sig) })
	t.Logf("allocations per verification: table %v, stdlib %v", got, std)
	// math/big's ModInverse and nistec's BytesX allocate where the standard
	// library's internal bigmod does not: at most two more, all small.
	if got > std+2 {
		t.Errorf("Table.Verify allocates %v times, expected at most ecdsa.VerifyASN1's %v + 2", got, std)
	}
}
