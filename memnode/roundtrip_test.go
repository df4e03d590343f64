package memnode_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/memnode"
)

// cpuTime is the process's user and system CPU so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRoundTrip prices one message to the memory node and its
// answer, node and client together (both run in this process): a read of
// one key on the read stream, and an Apply of one write. It reports
// the CPU of a call (cpu-µs/op) beside its latency (ns/op): on a small
// machine the CPU is what a call costs the peer's budget. The -idle
// forms sleep 500 µs before each call, so that it finds both ends'
// threads parked, as a peer's calls mostly do under load; sleep alone
// prices that sleep (subtract its figures).
func BenchmarkRoundTrip(b *testing.B) {
	_, _, s := writer(b, memnode.ServerOptions{}, -1) // no cache: every read goes to the node
	put(b, s, 1, "k", "v")
	report := func(b *testing.B, c0 time.Duration) {
		b.ReportMetric(float64(cpuTime(b)-c0)/float64(b.N)/1e3, "cpu-µs/op")
	}
	b.Run("read", func(b *testing.B) {
		out := make([]statedb.Result, 1)
		keys := []statedb.Key{{Namespace: "ns", Key: "k"}}
		c0 := cpuTime(b)
		for b.Loop() {
			if err := s.GetMany(keys, out); err != nil || !out[0].Found {
				b.Fatalf("GetMany: found %v, err %v", out[0].Found, err)
			}
		}
		report(b, c0)
	})
	b.Run("sleep", func(b *testing.B) {
		c0 := cpuTime(b)
		for b.Loop() {
			time.Sleep(500 * time.Microsecond)
		}
		report(b, c0)
	})
	b.Run("read-idle", func(b *testing.B) {
		out := make([]statedb.Result, 1)
		keys := []statedb.Key{{Namespace: "ns", Key: "k"}}
		c0 := cpuTime(b)
		for b.Loop() {
			time.Sleep(500 * time.Microsecond)
			if err := s.GetMany(keys, out); err != nil || !out[0].Found {
				b.Fatalf("GetMany: found %v, err %v", out[0].Found, err)
			}
		}
		report(b, c0)
	})
	apply := func(idle time.Duration) func(b *testing.B) {
		return func(b *testing.B) {
			h, _ := s.Savepoint()
			c0 := cpuTime(b)
			for b.Loop() {
				time.Sleep(idle)
				var batch statedb.Batch
				h++
				batch.Put("ns", fmt.Sprintf("k%d", h%64), []byte("v"), statedb.Version{Block: h})
				if err := s.Apply(&batch, h, false); err != nil {
					b.Fatal(err)
				}
			}
			report(b, c0)
		}
	}
	b.Run("apply", apply(0))
	b.Run("apply-idle", apply(500*time.Microsecond))
}
