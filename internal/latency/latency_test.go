package latency

import (
	"sync"
	"testing"
	"time"
)

func TestHistogram(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{50 * time.Microsecond, 100 * time.Microsecond, 150 * time.Microsecond, 3 * time.Millisecond, time.Minute} {
		h.Record(d)
	}
	s := h.Snapshot()
	if s.Count != 5 || s.Max != time.Minute {
		t.Fatalf("count %d max %s, want 5 and 1m", s.Count, s.Max)
	}
	want := map[int]uint64{0: 2, 1: 1, 5: 1, len(Bounds): 1} // 3.2 ms is Bounds[5]
	for i, c := range s.Counts {
		if c != want[i] {
			t.Errorf("bucket %d (≤%v) holds %d, want %d", i, bound(i), c, want[i])
		}
	}
	if q := s.Quantile(0.5); q != 200*time.Microsecond {
		t.Errorf("p50 = %s, want 200µs", q)
	}
	if q := s.Quantile(1); q != time.Minute {
		t.Errorf("p100 = %s, want the max", q)
	}
	if (Snapshot{}).Quantile(0.5) != 0 || (Snapshot{}).Mean() != 0 {
		t.Error("an empty snapshot must report 0")
	}
}

func bound(i int) any {
	if i < len(Bounds) {
		return Bounds[i]
	}
	return "+Inf"
}

func TestHistogramConcurrent(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				h.Record(time.Duration(g*i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	if s := h.Snapshot(); s.Count != 4000 {
		t.Fatalf("count %d, want 4000", s.Count)
	}
}

func TestCumulative(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{50 * time.Microsecond, 150 * time.Microsecond, 150 * time.Microsecond, time.Minute} {
		h.Record(d)
	}
	cum := h.Snapshot().Cumulative()
	if len(cum) != len(Bounds) || cum[0.0001] != 1 || cum[0.0002] != 3 || cum[Bounds[len(Bounds)-1].Seconds()] != 3 {
		t.Errorf("cumulative %v: want 1 at 100µs, 3 from 200µs on (the minute is above every bound)", cum)
	}
}
