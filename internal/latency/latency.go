// Package latency is a lock-free latency histogram for strand's plain
// Metrics snapshots: components record into a Histogram from any
// goroutine and put its Snapshot, a plain value with a readable String,
// into their Metrics struct; node/ exports a Snapshot to Prometheus as a
// histogram (strand_<component>_<field>_seconds).
//
// The buckets are fixed (Bounds): powers of two from 100 µs to about
// 13 s, which covers an fsync on a fast disk up to an election's worth
// of stalled proposal. Fixed bounds keep Record to two atomic adds and
// make snapshots of different nodes comparable.
package latency

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Bounds are the upper bounds of the buckets (inclusive), ascending; a
// last, implicit bucket holds everything above the largest.
var Bounds = func() []time.Duration {
	b := make([]time.Duration, 18)
	d := 100 * time.Microsecond
	for i := range b {
		b[i] = d
		d *= 2
	}
	return b
}()

// Histogram counts durations into Bounds' buckets. The zero value is
// ready; it is safe for concurrent use.
type Histogram struct {
	counts [19]atomic.Uint64 // len(Bounds)+1
	sum    atomic.Int64
	max    atomic.Int64
}

// Record adds one observation.
func (h *Histogram) Record(d time.Duration) {
	i := 0
	for i < len(Bounds) && d > Bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// Snapshot returns the counts so far.
func (h *Histogram) Snapshot() Snapshot {
	s := Snapshot{Counts: make([]uint64, len(h.counts)), Sum: time.Duration(h.sum.Load()), Max: time.Duration(h.max.Load())}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		s.Count += s.Counts[i]
	}
	return s
}

// Snapshot is a histogram's state: Counts[i] observations in bucket i
// (at most Bounds[i], above Bounds[i-1]; the last bucket is everything
// above the largest bound), their number and their sum. The counts are
// read one by one, so a snapshot taken while others record may be off by
// the observations in flight.
type Snapshot struct {
	Counts []uint64
	Count  uint64
	Sum    time.Duration
	Max    time.Duration
}

// Mean returns the average observation, 0 if none.
func (s Snapshot) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / time.Duration(s.Count)
}

// Quantile returns the upper bound of the bucket that holds the q-th
// quantile (0 < q <= 1): an upper estimate, exact to a factor of two; Max
// for the last bucket; 0 if there are no observations.
func (s Snapshot) Quantile(q float64) time.Duration {
	if s.Count == 0 {
		return 0
	}
	rank := uint64(q*float64(s.Count) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range s.Counts {
		seen += c
		if seen >= rank {
			if i < len(Bounds) {
				return min(Bounds[i], s.Max)
			}
			return s.Max
		}
	}
	return s.Max
}

// String renders count, mean, p50, p99 and max.
func (s Snapshot) String() string {
	return fmt.Sprintf("%d, mean %s, p50 ≤%s, p99 ≤%s, max %s", s.Count, s.Mean(), s.Quantile(0.5), s.Quantile(0.99), s.Max)
}

// Since records the time elapsed since start.
func (h *Histogram) Since(start time.Time) { h.Record(time.Since(start)) }

// Cumulative returns, for each bound in seconds, the number of
// observations at or below it: Prometheus's histogram buckets.
func (s Snapshot) Cumulative() map[float64]uint64 {
	out := make(map[float64]uint64, len(Bounds))
	var n uint64
	for i, b := range Bounds {
		if i < len(s.Counts) {
			n += s.Counts[i]
		}
		// One division, correctly rounded: the nearest float64 to the
		// bound in seconds, which prints as its decimal (1.6384, where
		// Duration.Seconds' two-part sum gives 1.6383999999999999).
		out[float64(b)/1e9] = n
	}
	return out
}
