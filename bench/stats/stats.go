package stats

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds, in microseconds.
const (
	minMicros = 1
	maxMicros = 10 * 60 * 1e6
	sigFigs   = 3
)

// Histogram is a latency histogram; not safe for concurrent use (a
// Recorder guards its own).
type Histogram struct{ h *hdrhistogram.Histogram }

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(minMicros, maxMicros, sigFigs)}
}

// Record adds one latency; values outside 1 µs to 10 min are clamped.
func (h *Histogram) Record(d time.Duration) {
	us := min(max(d.Microseconds(), minMicros), maxMicros)
	_ = h.h.RecordValue(us) // in range by the clamp
}

// Summary is a histogram's figures in milliseconds.
type Summary struct {
	Count int64   `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

func ms(us int64) float64 { return float64(us) / 1000 }

// Summary returns the histogram's figures; all 0 when it is empty.
func (h *Histogram) Summary() Summary {
	if h.h.TotalCount() == 0 {
		return Summary{}
	}
	return Summary{
		Count: h.h.TotalCount(),
		Min:   ms(h.h.Min()), Mean: h.h.Mean() / 1000,
		P50: ms(h.h.ValueAtQuantile(50)), P95: ms(h.h.ValueAtQuantile(95)),
		P99: ms(h.h.ValueAtQuantile(99)), Max: ms(h.h.Max()),
	}
}

func (s Summary) String() string {
	return fmt.Sprintf("n=%d min=%.2f mean=%.2f p50=%.2f p95=%.2f p99=%.2f max=%.2f ms", s.Count, s.Min, s.Mean, s.P50, s.P95, s.P99, s.Max)
}

// Point is one point of a cumulative distribution: a fraction of samples
// at or below Ms milliseconds.
type Point struct {
	Ms       float64 `json:"ms"`
	Fraction float64 `json:"fraction"`
}

// CDF returns the cumulative distribution at the quantiles 0, 1/n, …, 1.
func (h *Histogram) CDF(n int) []Point {
	if h.h.TotalCount() == 0 || n < 1 {
		return nil
	}
	out := make([]Point, 0, n+1)
	for i := 0; i <= n; i++ {
		q := float64(i) / float64(n)
		out = append(out, Point{Ms: ms(h.h.ValueAtQuantile(100 * q)), Fraction: q})
	}
	return out
}

// Bucket is one second of a round.
type Bucket struct {
	Sent      int64 `json:"sent"`      // transactions started (submitted or evaluated)
	Committed int64 `json:"committed"` // committed, any code
	Valid     int64 `json:"valid"`     // committed VALID
	Evaluated int64 `json:"evaluated"` // evaluations answered
	Errors    int64 `json:"errors"`    // refused or failed before commit
}

// Recorder collects a round's samples. Times are offsets from the round's
// start.
type Recorder struct {
	mu struct {
		sync.Mutex
		e2e, eval *Histogram
		phases    map[string]*Histogram
		byCode    map[string]int64
		series    []Bucket
		errors    map[string]int64  // error class → count
		examples  map[string]string // error class → its first error
		lastErr   string
	}
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	r := &Recorder{}
	r.mu.e2e, r.mu.eval = NewHistogram(), NewHistogram()
	r.mu.phases = map[string]*Histogram{}
	r.mu.byCode = map[string]int64{}
	r.mu.errors = map[string]int64{}
	r.mu.examples = map[string]string{}
	return r
}

// bucketLocked returns the bucket of offset at, growing the series.
func (r *Recorder) bucketLocked(at time.Duration) *Bucket {
	i := max(0, int(at/time.Second))
	for len(r.mu.series) <= i {
		r.mu.series = append(r.mu.series, Bucket{})
	}
	return &r.mu.series[i]
}

// Sent counts a transaction started at offset at.
func (r *Recorder) Sent(at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bucketLocked(at).Sent++
}

// Committed records a transaction committed at offset at with code,
// its end-to-end latency and the latencies of its phases (by name).
func (r *Recorder) Committed(at time.Duration, code string, e2e time.Duration, phases map[string]time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bucketLocked(at)
	b.Committed++
	if code == "VALID" {
		b.Valid++
	}
	r.mu.byCode[code]++
	r.mu.e2e.Record(e2e)
	for name, d := range phases {
		h := r.mu.phases[name]
		if h == nil {
			h = NewHistogram()
			r.mu.phases[name] = h
		}
		h.Record(d)
	}
}

// Phase records n samples of latency d for phase name (a block's
// pipeline stage counts once per transaction of the block).
func (r *Recorder) Phase(name string, d time.Duration, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.mu.phases[name]
	if h == nil {
		h = NewHistogram()
		r.mu.phases[name] = h
	}
	us := min(max(d.Microseconds(), minMicros), maxMicros)
	_ = h.h.RecordValues(us, int64(n)) // in range by the clamp
}

// Evaluated records an answered evaluation (query).
func (r *Recorder) Evaluated(at, latency time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bucketLocked(at).Evaluated++
	r.mu.eval.Record(latency)
}

// Failed records a transaction refused or failed before commit; class
// groups errors in the result (such as "endorse 404").
func (r *Recorder) Failed(at time.Duration, class string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bucketLocked(at).Errors++
	r.mu.errors[class]++
	if _, ok := r.mu.examples[class]; !ok {
		r.mu.examples[class] = err.Error()
	}
	r.mu.lastErr = err.Error()
}

// Result is a snapshot of a Recorder.
type Result struct {
	Sent      int64              `json:"sent"`
	Committed int64              `json:"committed"`
	Valid     int64              `json:"valid"`
	Evaluated int64              `json:"evaluated"`
	Errors    int64              `json:"errors"`
	ByCode    map[string]int64   `json:"by_code"`
	ByError   map[string]int64   `json:"by_error,omitempty"`
	Examples  map[string]string  `json:"error_examples,omitempty"` // the first error of each class
	LastError string             `json:"last_error,omitempty"`
	Latency   Summary            `json:"latency_ms"`
	EvalLat   Summary            `json:"evaluate_latency_ms"`
	Phases    map[string]Summary `json:"phase_latency_ms,omitempty"`
	CDF       []Point            `json:"latency_cdf,omitempty"`
	EvalCDF   []Point            `json:"evaluate_latency_cdf,omitempty"`
	Series    []Bucket           `json:"series"`
}

// cdfPoints is the resolution of a Result's CDF.
const cdfPoints = 200

// Snapshot returns the figures so far.
func (r *Recorder) Snapshot() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := Result{
		ByCode: maps.Clone(r.mu.byCode), ByError: maps.Clone(r.mu.errors), Examples: maps.Clone(r.mu.examples), LastError: r.mu.lastErr,
		Latency: r.mu.e2e.Summary(), EvalLat: r.mu.eval.Summary(), CDF: r.mu.e2e.CDF(cdfPoints), EvalCDF: r.mu.eval.CDF(cdfPoints),
		Series: slices.Clone(r.mu.series), Phases: map[string]Summary{},
	}
	for name, h := range r.mu.phases {
		res.Phases[name] = h.Summary()
	}
	for _, b := range res.Series {
		res.Sent += b.Sent
		res.Committed += b.Committed
		res.Valid += b.Valid
		res.Evaluated += b.Evaluated
		res.Errors += b.Errors
	}
	return res
}

// Codes returns the result's validation codes, VALID first, then by count.
func (r Result) Codes() []string {
	codes := slices.Collect(maps.Keys(r.ByCode))
	slices.SortFunc(codes, func(a, b string) int {
		switch {
		case a == "VALID":
			return -1
		case b == "VALID":
			return 1
		case r.ByCode[a] != r.ByCode[b]:
			return int(r.ByCode[b] - r.ByCode[a])
		}
		return strings.Compare(a, b)
	})
	return codes
}

// String renders the counts and the end-to-end latency.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sent %d, committed %d (VALID %d), evaluated %d, errors %d; latency %v", r.Sent, r.Committed, r.Valid, r.Evaluated, r.Errors, r.Latency)
	for _, c := range r.Codes() {
		fmt.Fprintf(&b, "; %s %d", c, r.ByCode[c])
	}
	return b.String()
}
