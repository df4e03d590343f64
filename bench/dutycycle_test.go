package bench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strand-ledger/strand/energy"
	"github.com/strand-ledger/strand/identity/p256"
	"github.com/strand-ledger/strand/internal/proccpu"
)

// BenchmarkVerifyDutyCycle separates the platform from strand in a paced
// replay's CPU per transaction. It does nothing but what dominates a
// validating peer's CPU (P-256 verifications, about 90% of a replay's
// profile, here through the peer's own path: identity/p256's per-key
// tables), in bursts shaped like a 100-transaction block on two workers
// (300 verifications under 32 keys), with the idle gap after each burst
// that a peer paced at a duty cycle of 100%, 50% or 25% sees, and reports
// the process's CPU time per verification at each duty cycle. The duty
// cycles are interleaved within every iteration so that the other
// tenants of a shared machine weigh on each alike. There is no strand
// code in the loop but the verification: no channels between stages, no
// store, no meter. If CPU per verification still rises as the duty cycle
// falls, the rise is the machine's (frequency, caches, the hypervisor),
// not strand's pipeline's.
//
// Each worker also times its own thread (CLOCK_THREAD_CPUTIME_ID) over
// its first 16 verifications of a burst, about the first 2 ms of a block,
// and over the rest: first-µs/verify against rest-µs/verify says whether
// a rise is a cold start after the idle gap or a slower machine
// throughout.
//
// It also prices each burst as the study's busy periods are priced, under
// the default model (energy.DefaultActiveWatts per busy core,
// energy.DefaultIdleWatts per idle one, both workers' cores charged over
// the burst's wall span): busy-verify/J@duty is verifications per busy
// joule, and busy-spread-% how far the largest of the three lies above
// the smallest. With no pipeline, store or fsync in the loop, that spread
// is the floor the machine sets under the idle preset's busy spread (a
// burst's cores still wait for the second worker's thread to wake, for
// the uneven end, and run the first verifications cold).
//
//	go test -run XXX -bench VerifyDutyCycle -benchtime 3x ./bench/
func BenchmarkVerifyDutyCycle(b *testing.B) {
	// Each duty cycle's phase lasts about a second of wall time, as a
	// paced replay of 10,000 transactions does at full speed: the
	// platform's response to load (a host's frequency governor) is not
	// instant, and phases of a few bursts would all look alike.
	const workers, perWorker, first, fullBursts, keys = 2, 150, 16, 80, 32
	type signed struct {
		table  *p256.Table
		digest [32]byte
		sig    []byte
	}
	var sigs [keys]signed
	for i := range sigs {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		sigs[i].digest = sha256.Sum256([]byte{byte(i)})
		if sigs[i].sig, err = ecdsa.SignASN1(rand.Reader, key, sigs[i].digest[:]); err != nil {
			b.Fatal(err)
		}
		if sigs[i].table, err = p256.NewTable(&key.PublicKey); err != nil {
			b.Fatal(err)
		}
	}
	var firstNs, restNs atomic.Int64
	burst := func() (span, cpu time.Duration) {
		t0, c0 := time.Now(), selfCPU(b)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread() // one thread's clock across the burst
				defer runtime.UnlockOSThread()
				c0 := threadCPU()
				var c1 time.Duration
				for i := 0; i < perWorker; i++ {
					if i == first {
						c1 = threadCPU()
					}
					s := &sigs[(w*perWorker+i)%keys]
					if !s.table.Verify(s.digest[:], s.sig) {
						panic("bench: a good signature failed to verify")
					}
				}
				c2 := threadCPU()
				firstNs.Add(int64(c1 - c0))
				restNs.Add(int64(c2 - c1))
			}()
		}
		wg.Wait()
		return time.Since(t0), selfCPU(b) - c0
	}
	duties := []float64{1, 0.5, 0.25}
	bursts := func(duty float64) int { return int(fullBursts * duty) }
	cpu := make([]time.Duration, len(duties))
	firstCPU := make([]time.Duration, len(duties))
	restCPU := make([]time.Duration, len(duties))
	busyJ := make([]float64, len(duties))
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for d, duty := range duties {
			c0, err := proccpu.Self()
			if err != nil {
				b.Fatal(err)
			}
			firstNs.Store(0)
			restNs.Store(0)
			for i := 0; i < bursts(duty); i++ {
				t0 := time.Now()
				span, c := burst()
				busyJ[d] += burstJoules(workers, span, c)
				time.Sleep(time.Duration(float64(time.Since(t0)) * (1/duty - 1)))
			}
			c1, err := proccpu.Self()
			if err != nil {
				b.Fatal(err)
			}
			cpu[d] += c1 - c0
			firstCPU[d] += time.Duration(firstNs.Load())
			restCPU[d] += time.Duration(restNs.Load())
		}
	}
	lo, hi := 0.0, 0.0
	for d, duty := range duties {
		n := float64(b.N * bursts(duty) * workers)
		perJ := n * perWorker / busyJ[d]
		b.ReportMetric(perJ, fmt.Sprintf("busy-verify/J@%.0f%%", 100*duty))
		if d == 0 || perJ < lo {
			lo = perJ
		}
		hi = max(hi, perJ)
		b.ReportMetric(float64(cpu[d].Nanoseconds())/1e3/(n*perWorker), fmt.Sprintf("cpu-µs/verify@%.0f%%", 100*duty))
		b.ReportMetric(float64(firstCPU[d].Nanoseconds())/1e3/(n*first), fmt.Sprintf("first-µs/verify@%.0f%%", 100*duty))
		b.ReportMetric(float64(restCPU[d].Nanoseconds())/1e3/(n*(perWorker-first)), fmt.Sprintf("rest-µs/verify@%.0f%%", 100*duty))
	}
	b.ReportMetric(100*(hi/lo-1), "busy-spread-%")
	b.ReportMetric(0, "ns/op")
}

// burstJoules prices one burst on cores cores under the default model:
// its CPU at active power, the rest of the cores' time over its span at
// idle power (the model clamps the CPU to the cores' time).
func burstJoules(cores int, span, cpu time.Duration) float64 {
	core := float64(cores) * span.Seconds()
	c := min(cpu.Seconds(), core)
	return energy.DefaultActiveWatts*c + energy.DefaultIdleWatts*(core-c)
}

func selfCPU(b *testing.B) time.Duration {
	c, err := proccpu.Self()
	if err != nil {
		b.Fatal(err)
	}
	return c
}
