package isolation

import (
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Measuring. The loop does not watch transactions itself; it reads what
// every peer already exports at its /metrics endpoint (node/metrics.go,
// node/structmetrics.go) once per period and turns two consecutive
// readings into a Sample:
//
//   - Throughput: strand_committer_transactions_total, summed over its
//     "code" label. Every transaction the orderers cut is committed on
//     every peer, valid or not (an MVCC conflict is work done, not
//     interference), so each peer's rate estimates the network's; the
//     sample's is their mean, which smooths the peers' scrape jitter and
//     which a peer slowed by a neighbour pulls down.
//   - P99: strand_gateway_commit_latency_seconds, the histogram of how
//     long a client waited for its transaction to commit at the gateway
//     it submitted to. The bucket counts' increase over the period,
//     summed over the peers, is the period's histogram; its p99 is the
//     upper bound of the bucket holding rank ⌈0.99·n⌉ (an upper
//     estimate, exact to the buckets' factor of two), or the largest
//     finite bound when that rank falls above it (a lower estimate: the
//     p99 is at least that).
//   - Idle: no peer's strand_gateway_submit_total nor committed count rose.
//
// A peer counts in a period only when it answered both scrapes and no
// counter went down between them (a counter that goes down means the
// peer restarted and its counts started again from 0).

// Series the loop reads from each peer's /metrics.
const (
	committedSeries = "strand_committer_transactions_total"
	submittedSeries = "strand_gateway_submit_total"
	latencySeries   = "strand_gateway_commit_latency_seconds"
)

// Reading is what one scrape of one peer's /metrics says, at the time At
// it was taken.
type Reading struct {
	At        time.Time
	Committed float64 // transactions committed since the peer started, every code
	Submitted float64 // transactions submitted to its gateway since it started
	// Latency is the commit latency histogram: cumulative counts per
	// upper bound in seconds, as Prometheus exports it (the +Inf bucket
	// included).
	Latency []Bucket
}

// Bucket is one cumulative histogram bucket: Count observations at or
// below UpperBound seconds.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// ParseReading reads a peer's /metrics text exposition, taken at at, into
// a Reading. A peer that exports no committed-transactions series is an
// error naming the series (the other two are absent until used: a peer
// whose gateway took no transaction exports no latency buckets).
func ParseReading(r io.Reader, at time.Time) (Reading, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return Reading{}, fmt.Errorf("isolation: parsing /metrics: %w", err)
	}
	out := Reading{At: at}
	f, ok := fams[committedSeries]
	if !ok {
		return Reading{}, fmt.Errorf("isolation: /metrics has no %s, want a strand peer's metrics (%d families there)", committedSeries, len(fams))
	}
	for _, m := range f.GetMetric() {
		out.Committed += value(m)
	}
	if f, ok := fams[submittedSeries]; ok {
		for _, m := range f.GetMetric() {
			out.Submitted += value(m)
		}
	}
	if f, ok := fams[latencySeries]; ok && len(f.GetMetric()) == 1 {
		h := f.GetMetric()[0].GetHistogram()
		for _, b := range h.GetBucket() {
			out.Latency = append(out.Latency, Bucket{b.GetUpperBound(), float64(b.GetCumulativeCount())})
		}
		if n := len(out.Latency); n == 0 || !math.IsInf(out.Latency[n-1].UpperBound, 1) {
			out.Latency = append(out.Latency, Bucket{math.Inf(1), float64(h.GetSampleCount())})
		}
	}
	return out, nil
}

// value is a counter's, gauge's or untyped metric's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// Measure turns two consecutive readings per peer into the sample of the
// period between them, by the rules above. It returns false when no peer
// counts (none answered both scrapes, each restarted, or no time passed):
// there is no sample, and the controller must not be fed one.
func Measure(prev, cur map[string]Reading) (Sample, bool) {
	var rate, submitted, committed float64
	n := 0
	lat := map[float64]float64{} // upper bound → increase of its cumulative count
	for peer, c := range cur {
		p, ok := prev[peer]
		dt := c.At.Sub(p.At).Seconds()
		if !ok || dt <= 0 || c.Committed < p.Committed || c.Submitted < p.Submitted {
			continue
		}
		d, ok := latencyDelta(p.Latency, c.Latency)
		if !ok {
			continue // the histogram went down: restarted between the scrapes
		}
		for ub, x := range d {
			lat[ub] += x
		}
		n++
		rate += (c.Committed - p.Committed) / dt
		committed += c.Committed - p.Committed
		submitted += c.Submitted - p.Submitted
	}
	if n == 0 {
		return Sample{}, false
	}
	return Sample{
		Throughput: rate / float64(n),
		P99:        quantile(lat, 0.99),
		Idle:       committed == 0 && submitted == 0,
	}, true
}

// latencyDelta returns each bucket's increase from p to c, or false when
// some bucket went down. A bucket missing in p (no histogram yet) counts
// from 0.
func latencyDelta(p, c []Bucket) (map[float64]float64, bool) {
	before := make(map[float64]float64, len(p))
	for _, b := range p {
		before[b.UpperBound] = b.Count
	}
	d := make(map[float64]float64, len(c))
	for _, b := range c {
		x := b.Count - before[b.UpperBound]
		if x < 0 {
			return nil, false
		}
		d[b.UpperBound] = x
	}
	return d, true
}

// quantile returns the q-quantile of the cumulative histogram cum (upper
// bound in seconds → count) by the rule above; 0 when it is empty.
func quantile(cum map[float64]float64, q float64) time.Duration {
	bounds := make([]float64, 0, len(cum))
	for ub := range cum {
		bounds = append(bounds, ub)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 || cum[bounds[len(bounds)-1]] == 0 {
		return 0
	}
	total := cum[bounds[len(bounds)-1]] // the +Inf bucket, or the largest there is
	rank := math.Ceil(q * total)
	largest := 0.0
	for _, ub := range bounds {
		if math.IsInf(ub, 1) {
			break
		}
		largest = ub
		if cum[ub] >= rank {
			return seconds(ub)
		}
	}
	return seconds(largest)
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
