package isolation_test

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/internal/latency"
	"github.com/strand-ledger/strand/isolation"
	"github.com/strand-ledger/strand/node"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// hist builds cumulative buckets at 1 ms, 10 ms, 100 ms and +Inf from
// per-bucket counts.
func hist(per ...float64) []isolation.Bucket {
	bounds := []float64{0.001, 0.01, 0.1, math.Inf(1)}
	var out []isolation.Bucket
	var cum float64
	for i, n := range per {
		cum += n
		out = append(out, isolation.Bucket{UpperBound: bounds[i], Count: cum})
	}
	return out
}

func reading(sec int, committed, submitted float64, lat []isolation.Bucket) isolation.Reading {
	return isolation.Reading{At: t0.Add(time.Duration(sec) * time.Second), Committed: committed, Submitted: submitted, Latency: lat}
}

// TestMeasure checks the sample two scrapes make: rates per peer
// averaged, p99 from the bucket increases summed over the peers, idleness,
// and the peers that do not count (absent, restarted, no time passed).
func TestMeasure(t *testing.T) {
	type peers = map[string]isolation.Reading
	for _, tc := range []struct {
		name       string
		prev, cur  peers
		want       isolation.Sample
		wantSample bool
	}{
		{
			name: "one peer, rate over the elapsed time",
			prev: peers{"p0": reading(0, 100, 100, hist(0, 0, 0, 0))},
			cur:  peers{"p0": reading(2, 700, 700, hist(0, 0, 0, 0))},
			want: isolation.Sample{Throughput: 300}, wantSample: true,
		},
		{
			name: "two peers: mean rate; p99 of the summed bucket increases",
			prev: peers{"p0": reading(0, 0, 0, hist(50, 0, 0, 0)), "p1": reading(0, 0, 0, nil)},
			// 100 new observations: 98 at ≤1 ms, 2 at ≤100 ms → rank 99 is in the 100 ms bucket.
			cur:  peers{"p0": reading(1, 400, 300, hist(50+60, 0, 1, 0)), "p1": reading(1, 200, 100, hist(38, 0, 1, 0))},
			want: isolation.Sample{Throughput: 300, P99: 100 * time.Millisecond}, wantSample: true,
		},
		{
			name: "p99 in the lowest bucket",
			prev: peers{"p0": reading(0, 0, 0, nil)},
			cur:  peers{"p0": reading(1, 100, 100, hist(99, 1, 0, 0))},
			want: isolation.Sample{Throughput: 100, P99: time.Millisecond}, wantSample: true,
		},
		{
			name: "p99 above every finite bound: the largest finite bound",
			prev: peers{"p0": reading(0, 0, 0, nil)},
			cur:  peers{"p0": reading(1, 10, 10, hist(5, 0, 0, 5))},
			want: isolation.Sample{Throughput: 10, P99: 100 * time.Millisecond}, wantSample: true,
		},
		{
			name: "nothing submitted or committed: idle",
			prev: peers{"p0": reading(0, 500, 500, hist(500, 0, 0, 0))},
			cur:  peers{"p0": reading(1, 500, 500, hist(500, 0, 0, 0))},
			want: isolation.Sample{Idle: true}, wantSample: true,
		},
		{
			name: "submitted but nothing committed: not idle, zero throughput",
			prev: peers{"p0": reading(0, 500, 500, nil)},
			cur:  peers{"p0": reading(1, 500, 520, nil)},
			want: isolation.Sample{}, wantSample: true,
		},
		{
			name: "a restarted peer (counter went down) and an absent one do not count",
			prev: peers{"p0": reading(0, 100, 100, nil), "p1": reading(0, 9000, 9000, nil)},
			cur:  peers{"p0": reading(1, 150, 150, nil), "p1": reading(1, 40, 40, nil), "p2": reading(1, 10, 10, nil)},
			want: isolation.Sample{Throughput: 50}, wantSample: true,
		},
		{
			name: "a histogram that went down means a restart too",
			prev: peers{"p0": reading(0, 100, 100, hist(10, 0, 0, 0)), "p1": reading(0, 0, 0, nil)},
			cur:  peers{"p0": reading(1, 200, 200, hist(5, 0, 0, 0)), "p1": reading(1, 30, 30, nil)},
			want: isolation.Sample{Throughput: 30}, wantSample: true,
		},
		{
			name: "no peer in both scrapes: no sample",
			prev: peers{"p0": reading(0, 0, 0, nil)},
			cur:  peers{"p1": reading(1, 10, 10, nil)},
		},
		{
			name: "no time passed: no sample",
			prev: peers{"p0": reading(1, 0, 0, nil)},
			cur:  peers{"p0": reading(1, 10, 10, nil)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := isolation.Measure(tc.prev, tc.cur)
			if ok != tc.wantSample || got != tc.want {
				t.Fatalf("Measure = %+v, %v; want %+v, %v", got, ok, tc.want, tc.wantSample)
			}
		})
	}
}

// TestParseReading parses the exposition a peer serves: the gateway's
// series come from the collector node/ really registers for gateway
// Metrics, so a renamed field fails here; the committer's lines are the
// shape node.NewCommitterCollector writes.
func TestParseReading(t *testing.T) {
	var h latency.Histogram
	for range 98 {
		h.Record(time.Millisecond)
	}
	h.Record(time.Second)
	h.Record(time.Second)
	reg := prometheus.NewRegistry()
	reg.MustRegister(node.NewStructCollector("gateway", func() any {
		return gateway.Metrics{Submit: 123, CommitLatency: h.Snapshot()}
	}))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	buf.WriteString(`# TYPE strand_committer_transactions_total counter
strand_committer_transactions_total{code="VALID"} 100
strand_committer_transactions_total{code="MVCC_READ_CONFLICT"} 20
`)
	r, err := isolation.ParseReading(&buf, t0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Committed != 120 || r.Submitted != 123 || !r.At.Equal(t0) {
		t.Fatalf("Committed %v, Submitted %v, At %v; want 120, 123, %v", r.Committed, r.Submitted, r.At, t0)
	}
	last := r.Latency[len(r.Latency)-1]
	if len(r.Latency) != len(latency.Bounds)+1 || !math.IsInf(last.UpperBound, 1) || last.Count != 100 {
		t.Fatalf("Latency has %d buckets ending %+v; want %d ending at +Inf with 100", len(r.Latency), last, len(latency.Bounds)+1)
	}
	s, ok := isolation.Measure(map[string]isolation.Reading{"p": {At: t0.Add(-time.Second)}}, map[string]isolation.Reading{"p": r})
	if !ok || s.Throughput != 120 || s.P99 != 1638400*time.Microsecond {
		// rank 99 of 100 falls in the 1 s observations' bucket, ≤ 1.6384 s.
		t.Fatalf("Measure from zero = %+v, %v; want 120 tps and p99 1.6384s", s, ok)
	}

	_, err = isolation.ParseReading(strings.NewReader("go_goroutines 7\n"), t0)
	if err == nil || !strings.Contains(err.Error(), "strand_committer_transactions_total") {
		t.Fatalf("ParseReading of an orderer's metrics: %v, want an error naming the committed series", err)
	}
}
