package node

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/strand-ledger/strand/internal/latency"
)

func TestStructCollector(t *testing.T) {
	type refused struct{ Malformed, Forbidden uint64 }
	type metrics struct {
		Blocks      uint64
		Term        uint64 `metric:"gauge"`
		Fsync       latency.Snapshot
		AvgBlockTxs float64
		FsyncTotal  time.Duration
		Refused     refused
		ByCode      map[string]uint64
		Name        string // not a number: skipped
		hidden      int
	}
	var h latency.Histogram
	h.Record(150 * time.Microsecond)
	h.Record(3 * time.Millisecond)
	m := metrics{Blocks: 7, Term: 4, Fsync: h.Snapshot(), AvgBlockTxs: 2.5, FsyncTotal: 1500 * time.Millisecond, Refused: refused{Forbidden: 3},
		ByCode: map[string]uint64{"VALID": 9}, Name: "x", hidden: 1}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewStructCollector("orderer", func() any { return m }))
	want := `
# HELP strand_orderer_avg_block_txs strand metric strand_orderer_avg_block_txs (see the component's Metrics type).
# TYPE strand_orderer_avg_block_txs untyped
strand_orderer_avg_block_txs 2.5
# HELP strand_orderer_blocks strand metric strand_orderer_blocks (see the component's Metrics type).
# TYPE strand_orderer_blocks untyped
strand_orderer_blocks 7
# HELP strand_orderer_by_code strand metric strand_orderer_by_code (see the component's Metrics type).
# TYPE strand_orderer_by_code untyped
strand_orderer_by_code{key="VALID"} 9
# HELP strand_orderer_fsync_total_seconds strand metric strand_orderer_fsync_total_seconds (see the component's Metrics type).
# TYPE strand_orderer_fsync_total_seconds untyped
strand_orderer_fsync_total_seconds 1.5
# HELP strand_orderer_term strand metric strand_orderer_term (see the component's Metrics type).
# TYPE strand_orderer_term gauge
strand_orderer_term 4
# HELP strand_orderer_refused_forbidden strand metric strand_orderer_refused_forbidden (see the component's Metrics type).
# TYPE strand_orderer_refused_forbidden untyped
strand_orderer_refused_forbidden 3
# HELP strand_orderer_refused_malformed strand metric strand_orderer_refused_malformed (see the component's Metrics type).
# TYPE strand_orderer_refused_malformed untyped
strand_orderer_refused_malformed 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "strand_orderer_avg_block_txs", "strand_orderer_blocks",
		"strand_orderer_by_code", "strand_orderer_fsync_total_seconds", "strand_orderer_term", "strand_orderer_refused_forbidden",
		"strand_orderer_refused_malformed"); err != nil {
		t.Fatal(err)
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
