package bench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/strand-ledger/strand/internal/proccpu"
)

// BenchmarkVerifyDutyCycle separates the platform from strand in a paced
// replay's CPU per transaction. It does nothing but what dominates a
// validating peer's CPU (P-256 verifications, about 90% of a replay's
// profile), in bursts shaped like a 100-transaction block on two
// workers (300 verifications under 32 keys), with the idle gap after each burst that a
// peer paced at a duty cycle of 100%, 50% or 25% sees, and reports the
// process's CPU time per verification at each duty cycle. The duty
// cycles are interleaved within every iteration so that the other
// tenants of a shared machine weigh on each alike. There is no strand
// code in the loop: no channels between stages, no store, no meter. If
// CPU per verification still rises as the duty cycle falls, the rise is
// the machine's (frequency, caches, the hypervisor), not strand's.
//
//	go test -run XXX -bench VerifyDutyCycle -benchtime 3x ./bench/
func BenchmarkVerifyDutyCycle(b *testing.B) {
	// Each duty cycle's phase lasts about a second of wall time, as a
	// paced replay of 10,000 transactions does at full speed: the
	// platform's response to load (a host's frequency governor) is not
	// instant, and phases of a few bursts would all look alike.
	const workers, perWorker, fullBursts, keys = 2, 150, 80, 32
	type signed struct {
		pub    *ecdsa.PublicKey
		digest [32]byte
		sig    []byte
	}
	var sigs [keys]signed
	for i := range sigs {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		sigs[i].pub, sigs[i].digest = &key.PublicKey, sha256.Sum256([]byte{byte(i)})
		if sigs[i].sig, err = ecdsa.SignASN1(rand.Reader, key, sigs[i].digest[:]); err != nil {
			b.Fatal(err)
		}
	}
	burst := func() {
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < perWorker; i++ {
					s := &sigs[(w*perWorker+i)%keys]
					if !ecdsa.VerifyASN1(s.pub, s.digest[:], s.sig) {
						panic("bench: a good signature failed to verify")
					}
				}
			}()
		}
		wg.Wait()
	}
	duties := []float64{1, 0.5, 0.25}
	bursts := func(duty float64) int { return int(fullBursts * duty) }
	cpu := make([]time.Duration, len(duties))
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for d, duty := range duties {
			c0, err := proccpu.Self()
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < bursts(duty); i++ {
				t0 := time.Now()
				burst()
				time.Sleep(time.Duration(float64(time.Since(t0)) * (1/duty - 1)))
			}
			c1, err := proccpu.Self()
			if err != nil {
				b.Fatal(err)
			}
			cpu[d] += c1 - c0
		}
	}
	for d, duty := range duties {
		verifies := float64(b.N * bursts(duty) * workers * perWorker)
		b.ReportMetric(float64(cpu[d].Nanoseconds())/1e3/verifies, fmt.Sprintf("cpu-µs/verify@%.0f%%", 100*duty))
	}
	b.ReportMetric(0, "ns/op")
}
