package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/bench"
	"github.com/strand-ledger/strand/bench/stats"
)

// result builds a Result from known samples: 3 seconds of 100 commits
// each (10 MVCC conflicts per second) at 1 to 100 ms.
func result(label string, scale float64) *bench.Result {
	rec := stats.NewRecorder()
	for s := range 3 {
		for i := range 100 {
			at := time.Duration(s)*time.Second + time.Duration(i)*time.Millisecond
			rec.Sent(at)
			code := "VALID"
			if i%10 == 0 {
				code = "MVCC_READ_CONFLICT"
			}
			lat := time.Duration(float64(i+1)*scale) * time.Millisecond
			rec.Committed(at, code, lat, map[string]time.Duration{"endorse": lat / 4, "commit": lat / 2})
		}
	}
	rec.Failed(0, "endorse 404", errors.New("gone <&>"))
	s := rec.Snapshot()
	return &bench.Result{
		Label: label, Workload: "smallbank", Params: map[string]string{"mix": "caliper"}, Rate: "fixed-load 8 outstanding",
		Round: bench.Round{Clients: 8, Duration: 3 * time.Second}, Network: "embedded",
		ElapsedS: 3, ThroughputTPS: float64(s.Committed) / 3 / scale, GoodputTPS: float64(s.Valid) / 3 / scale, Result: s,
		CPUPercent: map[string]float64{"strand": 150}, RSSMB: map[string]float64{"strand": 80},
		Usage:  bench.Usage{Cores: 2, Procs: []bench.ProcUsage{{Name: "strand", CPUPercent: 150, RSSMB: 80, CPUSeries: []float64{140, 150, 160}}}},
		Checks: []string{"Smallbank invariant holds"},
	}
}

func TestHTMLWellFormedWithCharts(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, "strand bench <test>", []*bench.Result{result("a", 1), result("b & c", 2)}); err != nil {
		t.Fatal(err)
	}
	ids := wellFormed(t, b.String())
	for _, round := range []string{"0", "1"} {
		for _, chart := range []string{"throughput", "cdf", "phases", "cpu", "rss"} {
			if ids[chart+"-"+round] != "svg" {
				t.Errorf("no svg chart %s-%s", chart, round)
			}
		}
		if ids["config-"+round] != "table" {
			t.Errorf("no config table for round %s", round)
		}
	}
	html := b.String()
	for _, want := range []string{"<polyline", "MVCC_READ_CONFLICT", "b &amp; c", "endorse 404"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if strings.Contains(html, "http://") && strings.Contains(html, "src=") {
		t.Error("HTML refers to an external asset")
	}
}

func TestJSONCSVCompare(t *testing.T) {
	rs := []*bench.Result{result("a", 1)}
	path := filepath.Join(t.TempDir(), "a.json")
	var jb bytes.Buffer
	if err := WriteJSON(&jb, rs); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"label": "a"`, `"workload": "smallbank"`, `"throughput_tps": 100`, `"goodput_tps": 90`,
		`"latency_ms": {`, `"p99":`, `"by_code": {`, `"cpu_percent": {`, `"rss_mb": {`} {
		if !strings.Contains(jb.String(), field) {
			t.Errorf("JSON lacks %s", field)
		}
	}
	os.WriteFile(path, jb.Bytes(), 0o644)
	back, err := ReadJSON(path)
	if err != nil || len(back) != 1 || back[0].ByCode["VALID"] != 270 || back[0].Latency.P50 != rs[0].Latency.P50 {
		t.Fatalf("read back %v, %v", back, err)
	}
	var cb bytes.Buffer
	if err := WriteCSV(&cb, rs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cb).ReadAll()
	if err != nil || len(rows) != 2 || rows[0][0] != "label" || rows[1][5] != "100" || !strings.Contains(rows[1][slices.Index(rows[0], "by_code")], "MVCC_READ_CONFLICT=30") {
		t.Fatalf("csv %v, %v", rows, err)
	}
	var out bytes.Buffer
	Compare(&out, rs, []*bench.Result{result("a", 2)})
	if !strings.Contains(out.String(), "throughput tx/s") || !strings.Contains(out.String(), "0.50") || !strings.Contains(out.String(), "2.00") {
		t.Fatalf("compare:\n%s", out.String())
	}
	var tb bytes.Buffer
	WriteTable(&tb, rs)
	if !strings.Contains(tb.String(), "MVCC_READ_CONFLICT") || !strings.Contains(tb.String(), "check ok") {
		t.Fatalf("table:\n%s", tb.String())
	}
	if _, err := ReadJSON(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Fatal("read a missing file")
	}
}
