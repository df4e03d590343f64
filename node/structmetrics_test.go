package node

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/strand-ledger/strand/internal/latency"
	"github.com/strand-ledger/strand/internal/metriclint"
)

// testMetrics is a component's Metrics as the naming layer sees it; its
// doc comments are the HELP the test expects (internal/metricdoc holds
// them, generated from this file too).
type testMetrics struct {
	Blocks     uint64        `metric:"counter"` // Blocks cut.
	Term       uint64        `metric:"gauge"`   // The term.
	FsyncTotal time.Duration `metric:"counter"` // Time spent in fsyncs.
	Took       time.Duration `metric:"gauge"`   // How long it took.
	Refused    testRefused   // refusals
	// Blocks by code.
	ByCode map[string]uint64 `metric:"counter,key=code"`
	Name   string            // not a number: skipped
	Off    uint64            `metric:"-"`
	hidden int
}

type testRefused struct {
	// Refusals, by reason: malformed, forbidden.
	Malformed uint64 `metric:"counter,family=,reason=malformed"`
	Forbidden uint64 `metric:"counter,family=,reason=forbidden"` // not the HELP
}

func TestStructCollector(t *testing.T) {
	m := testMetrics{Blocks: 7, Term: 4, FsyncTotal: 1500 * time.Millisecond, Took: 250 * time.Millisecond,
		Refused: testRefused{Forbidden: 3}, ByCode: map[string]uint64{"VALID": 9}, Name: "x", Off: 5, hidden: 1}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewStructCollector("orderer", func() any { return m }))
	want := `
# HELP strand_orderer_blocks_total Blocks cut.
# TYPE strand_orderer_blocks_total counter
strand_orderer_blocks_total 7
# HELP strand_orderer_by_code_total Blocks by code.
# TYPE strand_orderer_by_code_total counter
strand_orderer_by_code_total{code="VALID"} 9
# HELP strand_orderer_fsync_seconds_total Time spent in fsyncs.
# TYPE strand_orderer_fsync_seconds_total counter
strand_orderer_fsync_seconds_total 1.5
# HELP strand_orderer_refused_total Refusals, by reason: malformed, forbidden.
# TYPE strand_orderer_refused_total counter
strand_orderer_refused_total{reason="forbidden"} 3
strand_orderer_refused_total{reason="malformed"} 0
# HELP strand_orderer_term The term.
# TYPE strand_orderer_term gauge
strand_orderer_term 4
# HELP strand_orderer_took_seconds How long it took.
# TYPE strand_orderer_took_seconds gauge
strand_orderer_took_seconds 0.25
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// TestStructCollectorUndocumented: a field of a struct metricdoc does not
// know gets a HELP that names it, and an untagged one is untyped; the
// node tests' lint (internal/metriclint) fails on both.
func TestStructCollectorUndocumented(t *testing.T) {
	m := struct{ Blocks uint64 }{3}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewStructCollector("x", func() any { return m }))
	var page strings.Builder
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&page, mf); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := metriclint.Lint([]byte(page.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 2 || !strings.Contains(problems[0], "has no doc comment") || !strings.Contains(problems[1], "untyped") {
		t.Fatalf("lint of %q: %q, want the missing doc comment and untyped", page.String(), problems)
	}
}

// TestStructCollectorHistogram: a latency.Snapshot field is a Prometheus
// histogram in seconds with cumulative buckets.
func TestStructCollectorHistogram(t *testing.T) {
	var h latency.Histogram
	h.Record(150 * time.Microsecond) // bucket ≤ 200 µs
	h.Record(3 * time.Millisecond)   // bucket ≤ 3.2 ms
	h.Record(time.Minute)            // above every bound
	m := struct{ Fsync latency.Snapshot }{h.Snapshot()}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewStructCollector("wal", func() any { return m }))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "strand_wal_fsync_seconds" {
		t.Fatalf("gathered %v, want one family strand_wal_fsync_seconds", mfs)
	}
	hist := mfs[0].GetMetric()[0].GetHistogram()
	if hist.GetSampleCount() != 3 {
		t.Errorf("count %d, want 3", hist.GetSampleCount())
	}
	for _, b := range hist.GetBucket() {
		var want uint64
		switch ub := b.GetUpperBound(); {
		case ub >= 0.0032:
			want = 2
		case ub >= 0.0002:
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket ≤%gs holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
}
