package report

import (
	"bytes"
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
		Nodes: []bench.NodeSched{{Name: "peer0.Org1", CPUPercent: 40, WaitPerCPUS: 3.2, WaitPerSliceMs: 0.41}},
		Controller: &bench.ControllerResult{K: 4, DelayTarget: 200 * time.Microsecond, Threshold: 900, Decisions: 12, Samples: 9,
			MeanDelayMs: 0.3, MaxShares: 5120, DefaultAfterStopS: -1}}
	b.Reset()
	WriteTable(&b, []*bench.Result{plain, with})
	for _, want := range []string{
		"hogs: 8, 1.5e+06 ops/s together over 5.0 s",
		"peer0.Org1: scheduling delay 0.41 ms per slice, 3.20 s per CPU-second (CPU 40%)",
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
