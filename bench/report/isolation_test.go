package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/bench"
)

// TestIsolationText: a round with hogs and a controller gets its lines
// and a row in the isolation table; a round without has neither, and a
// run without any such round prints no table.
func TestIsolationText(t *testing.T) {
	plain := result("plain", 1)
	var b bytes.Buffer
	WriteTable(&b, []*bench.Result{plain})
	if strings.Contains(b.String(), "isolation (") {
		t.Fatalf("a run without hogs or a controller printed an isolation table:\n%s", b.String())
	}
	with := result("together-controller", 2)
	with.Round.HogsStop = 5 * time.Second
	with.Isolation = &bench.IsolationResult{Hogs: 8, HogOpsPerS: 1.5e6, HogWindowS: 5,
		Nodes: []bench.NodeSched{{Name: "peer0.Org1", CPUPercent: 40, WaitPerCPUS: 3.2, WaitPerSliceMs: 0.41},
			{Name: "memnode.peer0.Org1", CPUPercent: 9, WaitPerCPUS: 3.5, WaitPerSliceMs: 0.11, QuotaCores: 0.3, ThrottledPct: 2.4}},
		Controller: &bench.ControllerResult{K: 4, DelayTarget: 200 * time.Microsecond, Threshold: 900, Decisions: 12, Samples: 9,
			MeanDelayMs: 0.3, MaxShares: 5120, DefaultAfterStopS: -1}}
	b.Reset()
	WriteTable(&b, []*bench.Result{plain, with})
	for _, want := range []string{
		"hogs: 8, 1.5e+06 ops/s together over 5.0 s",
		"  peer0.Org1: scheduling delay 0.41 ms per slice, 3.20 s per CPU-second (CPU 40%)\n",
		"memnode.peer0.Org1: scheduling delay 0.11 ms per slice, 3.50 s per CPU-second (CPU 9% of a 30% quota, throttled in 2% of its periods)",
		"controller: k 4, delay target 200µs, threshold 900 tx/s; 12 decisions over 9 samples, mean delay 0.30 ms, largest share 5120; shares NOT back at the default",
		"isolation (delay: mean run-queue wait per time slice, each node):",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	table := b.String()[strings.Index(b.String(), "isolation ("):]
	if strings.Contains(table, "plain") || !strings.Contains(table, "together-controller") || !strings.Contains(table, "1.50") {
		t.Errorf("isolation table: want the controller round only, with 1.50 Mops/s:\n%s", table)
	}
}

// TestIsolationHTML: the HTML report has the isolation table, with the
// text table's columns and the round's cells (escaped), only when some
// round has Isolation, and it stays well-formed.
func TestIsolationHTML(t *testing.T) {
	plain := result("plain", 1)
	var b bytes.Buffer
	if err := WriteHTML(&b, "t", []*bench.Result{plain}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="isolation"`) || strings.Contains(b.String(), "isolation (") {
		t.Fatalf("a run without Isolation has an isolation section")
	}
	with := result("together <k>", 2)
	with.Isolation = &bench.IsolationResult{Hogs: 8, HogOpsPerS: 1.5e6, HogWindowS: 5,
		Nodes:      []bench.NodeSched{{Name: "peer0.Org1", WaitPerSliceMs: 0.41}, {Name: "peer1.Org1", WaitPerSliceMs: 1.25}},
		Controller: &bench.ControllerResult{K: 4, MaxShares: 5120}}
	b.Reset()
	if err := WriteHTML(&b, "t", []*bench.Result{plain, with}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, `<table id="isolation"`)
	if i < 0 {
		t.Fatal("HTML lacks the isolation table")
	}
	table := out[i : i+strings.Index(out[i:], "</table>")]
	for _, want := range []string{
		"<caption>isolation (delay: mean run-queue wait per time slice, each node)</caption>",
		"<th>hog Mops/s</th><th>delay ms</th><th>largest share</th>",
		`<td class="l">together &lt;k&gt;</td><td>8</td><td>4</td>`,
		"<td>1.50</td><td>0.41 1.25</td><td>5120</td>",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("isolation table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "plain") {
		t.Errorf("isolation table has the round without Isolation:\n%s", table)
	}
	if n := strings.Count(table, "<tr>"); n != 2 {
		t.Errorf("isolation table has %d rows, want the header and one round", n)
	}
	wellFormed(t, out)
}

// TestControllerCharts: a round whose controller recorded its periods
// gets three charts (shares by component, throughput against the
// objective, delay and p99) with one point per period where the period
// put it; a round without periods gets none, and the page stays
// well-formed.
func TestControllerCharts(t *testing.T) {
	ps := []bench.ControllerPeriod{
		{T: 1, Throughput: 100, Threshold: 100, DelayMs: 0.1, P99Ms: 20, Shares: map[string]int{"orderer": 1024, "peer": 1024}},
		{T: 2, Throughput: 50, Threshold: 100, DelayMs: 0.5, P99Ms: 40, Shares: map[string]int{"orderer": 3072, "peer": 3072},
			Changes: []string{"peer 1024→3072: throughput 50.0 tps < threshold 100.0 tps"}},
		{T: 3, Throughput: 100, Threshold: 100, DelayMs: 0.1, P99Ms: 20, Shares: map[string]int{"orderer": 1024, "peer": 2048}},
	}
	with := result("together-controller", 2)
	with.ElapsedS = 4
	with.Isolation = &bench.IsolationResult{Hogs: 8, Controller: &bench.ControllerResult{K: 4, MaxShares: 3072, Periods: ps}}
	without := result("together", 2)
	without.Isolation = &bench.IsolationResult{Hogs: 8, Controller: &bench.ControllerResult{K: 4}}
	var b bytes.Buffer
	if err := WriteHTML(&b, "t", []*bench.Result{without, with}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	ids := wellFormed(t, out)
	for _, id := range []string{"controller-shares-1", "controller-throughput-1", "controller-delay-1"} {
		if ids[id] != "svg" {
			t.Errorf("no chart %s (ids %v)", id, ids)
		}
	}
	if _, ok := ids["controller-shares-0"]; ok {
		t.Errorf("a round without periods has a controller chart")
	}
	// The shares chart: one polyline per component, sorted (orderer,
	// peer), three points each; the peer's share falls from 3072 to 2048
	// in the last period, so its last point lies lower (greater y) than
	// its second.
	i := strings.Index(out, `id="controller-shares-1"`)
	chart := out[i : i+strings.Index(out[i:], "</svg>")]
	var lines [][][2]float64
	for _, m := range strings.Split(chart, `points="`)[1:] {
		var pts [][2]float64
		for _, xy := range strings.Fields(m[:strings.IndexByte(m, '"')]) {
			var x, y float64
			if _, err := fmt.Sscanf(xy, "%g,%g", &x, &y); err != nil {
				t.Fatalf("point %q: %v", xy, err)
			}
			pts = append(pts, [2]float64{x, y})
		}
		lines = append(lines, pts)
	}
	if len(lines) != 2 || len(lines[0]) != 3 || len(lines[1]) != 3 {
		t.Fatalf("shares chart has %d lines (%v), want 2 of 3 points", len(lines), lines)
	}
	orderer, peer := lines[0], lines[1]
	if !(peer[0][0] < peer[1][0] && peer[1][0] < peer[2][0]) || peer[2][1] <= peer[1][1] || peer[1][1] >= peer[0][1] || orderer[2][1] != orderer[0][1] {
		t.Errorf("shares chart points: orderer %v, peer %v; want x rising, the peer up then part way down, the orderer back where it began", orderer, peer)
	}
	if !strings.Contains(chart, ">orderer<") || !strings.Contains(chart, ">peer<") {
		t.Errorf("shares chart's legend lacks the components:\n%s", chart)
	}
}
