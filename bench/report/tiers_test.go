package report

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/bench"
)

func tieredResult() *bench.Result {
	r := result("tiered <64>", 2)
	r.Tiers = &bench.TierResult{MemoryMB: 64, CacheMB: 8, CacheHits: 600, MemoryHits: 300, StorageReads: 100,
		CachePct: 60, MemoryPct: 30, StoragePct: 10, RemoteCalls: 90, RemoteP50Ms: 0.31, RemoteP99Ms: 2.5, Evicted: 7, MemoryHeldMB: 12.5}
	return r
}

// TestTiersText: a round with memory nodes gets its tier line and a row
// in the tiers table; a run without such a round prints no table.
func TestTiersText(t *testing.T) {
	plain := result("plain", 1)
	var b bytes.Buffer
	WriteTable(&b, []*bench.Result{plain})
	if strings.Contains(b.String(), "state tiers") || strings.Contains(b.String(), "tiers:") {
		t.Fatalf("a run without memory nodes printed tiers:\n%s", b.String())
	}
	b.Reset()
	WriteTable(&b, []*bench.Result{plain, tieredResult()})
	out := b.String()
	for _, want := range []string{
		"tiers: reads 60.0% local cache, 30.0% memory tier, 10.0% storage tier (600, 300, 100); remote reads p50 0.31 ms, p99 2.50 ms over 90 calls; memory tier 64 MiB per peer, 12.5 MiB held, 7 versions evicted; cache 8 MiB per peer",
		"state tiers (",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	table := out[strings.Index(out, "state tiers ("):]
	if strings.Contains(table, "plain") || !strings.Contains(table, "tiered <64>") || !strings.Contains(table, "remote p99 ms") {
		t.Errorf("tiers table: want the tiered round only:\n%s", table)
	}
}

// TestTiersHTMLCSV: the HTML report has the tiers table only when a
// round has tiers, and stays well-formed; the CSV ends with the tier
// columns, empty for a round without memory nodes.
func TestTiersHTMLCSV(t *testing.T) {
	rs := []*bench.Result{result("plain", 1), tieredResult()}
	var b bytes.Buffer
	if err := WriteHTML(&b, "t", rs[:1]); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="tiers"`) {
		t.Fatal("a run without memory nodes has a tiers table")
	}
	b.Reset()
	if err := WriteHTML(&b, "t", rs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if ids := wellFormed(t, out); ids["tiers"] != "table" {
		t.Fatalf("HTML lacks the tiers table: ids %v", ids)
	}
	table := out[strings.Index(out, `<table id="tiers"`):]
	table = table[:strings.Index(table, "</table>")]
	if !strings.Contains(table, `<td class="l">tiered &lt;64&gt;</td><td>64</td><td>8</td>`) || !strings.Contains(table, "<td>60.0</td><td>30.0</td><td>10.0</td><td>0.31</td><td>2.50</td>") {
		t.Errorf("tiers table:\n%s", table)
	}
	b.Reset()
	if err := WriteCSV(&b, rs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("csv %v, %v", rows, err)
	}
	i := slices.Index(rows[0], "cache_pct")
	p99 := slices.Index(rows[0], "remote_p99_ms")
	if i < 0 || p99 < 0 || rows[1][i] != "" || rows[2][i] != "60" || rows[2][p99] != "2.5" {
		t.Errorf("csv tier columns: header %v, rows %v and %v", rows[0], rows[1], rows[2])
	}
}

// TestMemoryLimitText: a round whose memory nodes were held to a memory
// limit gets a line per node with its cgroup's figures.
func TestMemoryLimitText(t *testing.T) {
	r := tieredResult()
	r.MemoryLimits = []bench.MemoryLimitResult{{Node: "memnode.peer0.Org1", LimitMB: 117, GoMemLimitMB: 73, UsageMB: 116.9,
		PeakMB: 117, CacheMB: 35.7, AnonMB: 79.8, DiskReadMB: 123.1}}
	var b bytes.Buffer
	WriteTable(&b, []*bench.Result{r})
	want := "memory limit: memnode.peer0.Org1 117 MiB (GOMEMLIMIT 73 MiB): held 116.9 MiB at the end (page cache 35.7, anonymous 79.8), peak 117.0; 123.1 MiB read from the disk during the load; 0 OOM kills"
	if !strings.Contains(b.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, b.String())
	}
}
