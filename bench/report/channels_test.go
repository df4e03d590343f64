package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/bench"
)

// withChannels makes r a round of two channels: demo with r's own
// figures, demo2 with scale's, and r the aggregate of nothing more (the
// report reads what it is given).
func withChannels(r *bench.Result, scale float64) *bench.Result {
	demo2 := result("x", scale)
	r.Channels = []bench.ChannelResult{
		{Channel: "demo", Workload: "kmeans", Params: map[string]string{"k": "4"}, Clients: 4, ThroughputTPS: r.ThroughputTPS / 2, Result: r.Result, Blocks: 7, Checks: []string{"ok"}},
		{Channel: "demo2", Workload: "ycsb", Params: map[string]string{"mix": "a"}, Clients: 4, ThroughputTPS: demo2.ThroughputTPS, Result: demo2.Result,
			Failures: []string{"the peers hold different states"}},
	}
	r.Workload = "kmeans+ycsb"
	return r
}

// TestChannelsReport: a round of two channels shows both in the table,
// as rows of the CSV (channel column), in the HTML page (table and
// charts) and in Compare.
func TestChannelsReport(t *testing.T) {
	rs := []*bench.Result{result("one", 1), withChannels(result("two", 1), 2)}
	var tb bytes.Buffer
	WriteTable(&tb, rs)
	for _, want := range []string{"per channel", "demo2", "channel demo2 (ycsb, mix=a): VALID 270", "FAILED", "kmeans+ycsb"} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tb.String())
		}
	}
	var cb bytes.Buffer
	if err := WriteCSV(&cb, rs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cb).ReadAll()
	if err != nil || len(rows) != 5 { // header, one, two, two's demo and demo2
		t.Fatalf("csv %d rows %v, %v: want a header, 2 rounds and 2 channel rows", len(rows), rows, err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for i, want := range [][4]string{{"one", "1", "", "smallbank"}, {"two", "2", "", "kmeans+ycsb"}, {"two", "2", "demo", "kmeans"}, {"two", "2", "demo2", "ycsb"}} {
		row := rows[i+1]
		got := [4]string{row[col["label"]], row[col["channels"]], row[col["channel"]], row[col["workload"]]}
		if got != want {
			t.Errorf("csv row %d: label, channels, channel, workload = %v, want %v", i+1, got, want)
		}
	}
	if row := rows[4]; row[col["checks"]] != "FAILED" || row[col["param_mix"]] != "a" || row[col["clients"]] != "4" {
		t.Errorf("demo2's row: checks %q, param_mix %q, clients %q", row[col["checks"]], row[col["param_mix"]], row[col["clients"]])
	}
	var hb bytes.Buffer
	if err := WriteHTML(&hb, "channels", rs); err != nil {
		t.Fatal(err)
	}
	ids := wellFormed(t, hb.String())
	for _, chart := range []string{"channels-tput-1", "channels-lat-1", "channels-time-1"} {
		if ids[chart] != "svg" {
			t.Errorf("no svg chart %s", chart)
		}
	}
	if ids["channels-tput-0"] != "" {
		t.Error("a round of one channel has a per-channel chart")
	}
	var out bytes.Buffer
	Compare(&out, rs[1:], []*bench.Result{withChannels(result("two", 1), 4)})
	for _, want := range []string{"[demo] throughput tx/s", "[demo2] throughput tx/s", "[demo2] p50 ms"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("compare lacks %q:\n%s", want, out.String())
		}
	}
}
