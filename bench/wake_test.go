package bench

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

// BenchmarkThreadWake measures the machine's other half of a lone block's
// idle core-time (docs/energy.md, "Thread wake-ups"): how long a thread
// parked on a channel takes to run after another thread hands it work,
// after an idle gap of 0, 0.2, 2 and 20 ms (a block every 24 ms is the
// idle preset's 25% rate). Both goroutines are locked to their own OS
// threads, so every handoff is a futex wake of a sleeping thread, as a
// verify worker's is when a block arrives at a paced peer. A core that
// waits for that wake sits idle inside the block's busy period, which the
// study's method charges at idle power.
//
//	go test -run XXX -bench ThreadWake -benchtime 400x ./bench/
func BenchmarkThreadWake(b *testing.B) {
	for _, gap := range []time.Duration{0, 200 * time.Microsecond, 2 * time.Millisecond, 20 * time.Millisecond} {
		b.Run(fmt.Sprintf("gap=%v", gap), func(b *testing.B) {
			handoff := make(chan time.Time)
			woke := make(chan time.Duration)
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				for sent := range handoff {
					woke <- time.Since(sent)
				}
			}()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				if gap > 0 {
					time.Sleep(gap)
				}
				handoff <- time.Now()
				lat = append(lat, <-woke)
			}
			b.StopTimer()
			close(handoff)
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs/wake")
			b.ReportMetric(float64(lat[len(lat)*9/10])/1e3, "p90-µs/wake")
			b.ReportMetric(0, "ns/op") // the gap's sleep, not a cost
		})
	}
}
