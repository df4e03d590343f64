package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/strand-ledger/strand/bench"
)

// writeTiers writes a round's tier line (nothing for a round without
// memory nodes).
func writeTiers(w io.Writer, r *bench.Result) {
	for _, m := range r.MemoryLimits {
		fmt.Fprintf(w, "  memory limit: %s %d MiB (GOMEMLIMIT %.0f MiB): held %.1f MiB at the end (page cache %.1f, anonymous %.1f), peak %.1f; %.1f MiB read from the disk during the load; %d OOM kills\n",
			m.Node, m.LimitMB, m.GoMemLimitMB, m.UsageMB, m.CacheMB, m.AnonMB, m.PeakMB, m.DiskReadMB, m.OOMKills)
	}
	t := r.Tiers
	if t == nil {
		return
	}
	fmt.Fprintf(w, "  tiers: reads %.1f%% local cache, %.1f%% memory tier, %.1f%% storage tier (%d, %d, %d); "+
		"remote reads p50 %.2f ms, p99 %.2f ms over %d calls; memory tier %d MiB per peer, %.1f MiB held, %d versions evicted; cache %d MiB per peer\n",
		t.CachePct, t.MemoryPct, t.StoragePct, t.CacheHits, t.MemoryHits, t.StorageReads,
		t.RemoteP50Ms, t.RemoteP99Ms, t.RemoteCalls, t.MemoryMB, t.MemoryHeldMB, t.Evicted, t.CacheMB)
	if n := r.ThroughputTPS * r.ElapsedS; n > 0 {
		fmt.Fprintf(w, "  messages to the memory nodes per committed tx (all peers): %.2f value multi-gets, %.2f version multi-gets (%.2f keys), %.2f applies; %.2f keys read remotely and not cached (a batch applied meanwhile)\n",
			float64(t.ValueCalls)/n, float64(t.VersionCalls)/n, float64(t.VersionReads)/n, float64(t.Applies)/n, float64(t.StalePuts)/n)
	}
	if len(t.Endorsed) > 0 {
		names := slices.Sorted(maps.Keys(t.Endorsed))
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = fmt.Sprintf("%s %d", n, t.Endorsed[n])
		}
		fmt.Fprintf(w, "  endorsed (proposals each pool member answered): %s\n", strings.Join(parts, ", "))
	}
}

// tiersHeader is the tiers table's columns, text and HTML alike.
var tiersHeader = []string{"label", "memory MiB", "cache MiB", "throughput tx/s", "p50 ms", "p99 ms",
	"cache %", "memory %", "storage %", "remote p50 ms", "remote p99 ms"}

// tiersCaption says what the columns are.
const tiersCaption = "state tiers (reads answered by the peers' local caches, the memory tiers and the storage tiers; remote: the peers' read calls to their memory nodes)"

// tiersRows is one row per round with memory nodes.
func tiersRows(rs []*bench.Result) [][]string {
	var rows [][]string
	for _, r := range rs {
		t := r.Tiers
		if t == nil {
			continue
		}
		l := latency(r)
		rows = append(rows, []string{r.Label, fmt.Sprint(t.MemoryMB), fmt.Sprint(t.CacheMB), f0(r.ThroughputTPS),
			f1(l.P50), f1(l.P99), f1(t.CachePct), f1(t.MemoryPct), f1(t.StoragePct),
			fmt.Sprintf("%.2f", t.RemoteP50Ms), fmt.Sprintf("%.2f", t.RemoteP99Ms)})
	}
	return rows
}

// writeTiersTable writes the tiers table (nothing without memory nodes).
func writeTiersTable(w io.Writer, rs []*bench.Result) {
	writeRowTable(w, tiersCaption, tiersHeader, tiersRows(rs))
}

// tiersHTML is the tiers table (nothing without memory nodes).
func tiersHTML(b *strings.Builder, rs []*bench.Result) {
	if rows := tiersRows(rs); len(rows) > 0 {
		rowTableHTML(b, "tiers", tiersCaption, tiersHeader, rows)
	}
}

// tiersCSV are the CSV's last columns: a round's tier figures, empty for
// a round without memory nodes.
var tiersCSV = []struct {
	name string
	get  func(t *bench.TierResult) string
}{
	{"memory_mb", func(t *bench.TierResult) string { return fmt.Sprint(t.MemoryMB) }},
	{"cache_mb", func(t *bench.TierResult) string { return fmt.Sprint(t.CacheMB) }},
	{"cache_pct", func(t *bench.TierResult) string { return fmt.Sprint(t.CachePct) }},
	{"memory_pct", func(t *bench.TierResult) string { return fmt.Sprint(t.MemoryPct) }},
	{"storage_pct", func(t *bench.TierResult) string { return fmt.Sprint(t.StoragePct) }},
	{"remote_p50_ms", func(t *bench.TierResult) string { return fmt.Sprint(t.RemoteP50Ms) }},
	{"remote_p99_ms", func(t *bench.TierResult) string { return fmt.Sprint(t.RemoteP99Ms) }},
}

// tiersCells are a round's tier columns for the CSV.
func tiersCells(r *bench.Result) []string {
	out := make([]string, len(tiersCSV))
	if r.Tiers != nil {
		for i, c := range tiersCSV {
			out[i] = c.get(r.Tiers)
		}
	}
	return out
}
