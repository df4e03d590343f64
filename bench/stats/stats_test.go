package stats

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

func TestHistogramKnownData(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 1000; i++ { // 1 ms … 1000 ms, uniform
		h.Record(time.Duration(i) * time.Millisecond)
	}
	s := h.Summary()
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > want*0.002+0.001 { // 3 significant digits
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if s.Count != 1000 {
		t.Fatalf("count %d", s.Count)
	}
	near("min", s.Min, 1)
	near("p50", s.P50, 500)
	near("p95", s.P95, 950)
	near("p99", s.P99, 990)
	near("max", s.Max, 1000)
	near("mean", s.Mean, 500.5)
	cdf := h.CDF(4)
	if len(cdf) != 5 || cdf[0].Fraction != 0 || cdf[4].Fraction != 1 {
		t.Fatalf("cdf %v: want 5 points from 0 to 1", cdf)
	}
	near("cdf 0.25", cdf[1].Ms, 250)
	near("cdf 1", cdf[4].Ms, 1000)
	if (NewHistogram().Summary() != Summary{}) || NewHistogram().CDF(10) != nil {
		t.Fatal("an empty histogram has figures")
	}
}

func TestRecorder(t *testing.T) {
	r := NewRecorder()
	var wg sync.WaitGroup
	for c := range 4 { // concurrent clients
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				at := time.Duration(i*30) * time.Millisecond // 0 to 2.97 s
				r.Sent(at)
				code := "VALID"
				if i%10 == 0 {
					code = "MVCC_READ_CONFLICT"
				}
				r.Committed(at, code, 5*time.Millisecond, map[string]time.Duration{"endorse": time.Millisecond})
				if c == 0 && i < 3 {
					r.Failed(at, "endorse 404", errors.New("gone"))
				}
			}
		}()
	}
	wg.Wait()
	r.Evaluated(-time.Second, 2*time.Millisecond) // before the start: first second
	res := r.Snapshot()
	if res.Sent != 400 || res.Committed != 400 || res.Valid != 360 || res.Errors != 3 || res.Evaluated != 1 {
		t.Fatalf("result %v", res)
	}
	if res.ByCode["MVCC_READ_CONFLICT"] != 40 || res.ByError["endorse 404"] != 3 || res.LastError != "gone" || res.Examples["endorse 404"] != "gone" {
		t.Fatalf("by code %v, by error %v", res.ByCode, res.ByError)
	}
	if len(res.Series) != 3 || res.Series[0].Committed != 4*34 || res.Series[0].Evaluated != 1 {
		t.Fatalf("series %v: want 3 seconds, 136 committed in the first", res.Series)
	}
	if res.Phases["endorse"].Count != 400 || math.Abs(res.Latency.P50-5) > 0.01 {
		t.Fatalf("phases %v, latency %v", res.Phases, res.Latency)
	}
	if codes := res.Codes(); len(codes) != 2 || codes[0] != "VALID" {
		t.Fatalf("codes %v", codes)
	}
}
