package node

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestStructCollector(t *testing.T) {
	type refused struct{ Malformed, Forbidden uint64 }
	type metrics struct {
		Blocks      uint64
		AvgBlockTxs float64
		FsyncTotal  time.Duration
		Refused     refused
		ByCode      map[string]uint64
		Name        string // not a number: skipped
		hidden      int
	}
	m := metrics{Blocks: 7, AvgBlockTxs: 2.5, FsyncTotal: 1500 * time.Millisecond, Refused: refused{Forbidden: 3},
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
# HELP strand_orderer_refused_forbidden strand metric strand_orderer_refused_forbidden (see the component's Metrics type).
# TYPE strand_orderer_refused_forbidden untyped
strand_orderer_refused_forbidden 3
# HELP strand_orderer_refused_malformed strand metric strand_orderer_refused_malformed (see the component's Metrics type).
# TYPE strand_orderer_refused_malformed untyped
strand_orderer_refused_malformed 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
