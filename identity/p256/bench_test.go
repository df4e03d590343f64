package p256

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
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

// BenchmarkVerifyKeys verifies round-robin over several keys with tables
// at the pinned width, as a node does (its clients', peers' and orderers'
// keys), hot and cold: in cold, other work (a walk over 16 MiB) between
// two verifications evicts the tables from the caches, as a node's gRPC,
// decoding and storage work does.
func BenchmarkVerifyKeys(b *testing.B) {
	d := sha256.Sum256([]byte("strand"))
	other := make([]byte, 16<<20)
	for _, keys := range []int{1, 8} {
		tabs := make([]*Table, keys)
		sigs := make([][]byte, keys)
		for i := range tabs {
			priv := newKey(b)
			t, err := NewTableWindow(&priv.PublicKey, MaxWindow)
			if err != nil {
				b.Fatal(err)
			}
			tabs[i] = t
			if sigs[i], err = ecdsa.SignASN1(rand.Reader, priv, d[:]); err != nil {
				b.Fatal(err)
			}
		}
		for _, cold := range []bool{false, true} {
			name := fmt.Sprintf("keys=%d", keys)
			if cold {
				name += "/cold"
			}
			b.Run(name, func(b *testing.B) {
				i := 0
				for b.Loop() {
					if cold {
						b.StopTimer()
						for j := 0; j < len(other); j += 64 {
							other[j]++
						}
						b.StartTimer()
					}
					if !tabs[i].Verify(d[:], sigs[i]) {
						b.Fatal("table rejects")
					}
					i = (i + 1) % keys
				}
			})
		}
	}
}
