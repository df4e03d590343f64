package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/strand-ledger/strand/bench"
	"github.com/strand-ledger/strand/bench/stats"
)

const style = `body{font-family:sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f4f4f4}td.l{text-align:left}.chart{margin:0.5em 1em 0.5em 0;border:1px solid #eee}
.grid{stroke:#e4e4e4}.tick{font-size:10px;fill:#555}.axis{font-size:11px;fill:#333}.title{font-size:13px;font-weight:bold}
.fail{color:#b00;font-weight:bold}.ok{color:#070}`

// WriteHTML writes a self-contained report: a summary table, and per
// round its charts (throughput and goodput over time, latency CDF,
// latency by phase, resources by process) and its configuration. The
// output is well-formed XHTML, with no external assets.
func WriteHTML(w io.Writer, title string, rs []*bench.Result) error {
	var b strings.Builder
	pageStart(&b, title)
	if len(rs) > 0 {
		// Which build ran the rounds, where: rs[0]'s (a report is one run).
		fmt.Fprintf(&b, "<p>%s on %s</p>", esc(rs[0].Build.String()), esc(rs[0].Host.String()))
	}
	cols := slices.DeleteFunc(slices.Clone(columns), func(c column) bool { return c.shown != nil && !c.shown(rs) })
	b.WriteString("<table><tr>")
	for _, c := range cols {
		fmt.Fprintf(&b, "<th>%s</th>", esc(c.name))
	}
	b.WriteString("</tr>")
	for _, r := range rs {
		b.WriteString("<tr>")
		for i, c := range cols {
			cls := ""
			if i < 2 {
				cls = ` class="l"`
			}
			fmt.Fprintf(&b, "<td%s>%s</td>", cls, esc(c.get(r)))
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
	isolationHTML(&b, rs)
	tiersHTML(&b, rs)
	for i, r := range rs {
		roundHTML(&b, i, r)
	}
	if len(rs) > 0 {
		fmt.Fprintf(&b, "<p><small>%s</small></p>", esc(rs[0].Measures))
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// pageStart opens a report page: its head, style, title and time.
func pageStart(b *strings.Builder, title string) {
	b.WriteString("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><meta charset=\"utf-8\"/>")
	fmt.Fprintf(b, "<title>%s</title><style>%s</style></head><body>", esc(title), style)
	fmt.Fprintf(b, "<h1>%s</h1><p>%s</p>", esc(title), esc(time.Now().UTC().Format(time.RFC3339)))
}

func roundHTML(b *strings.Builder, i int, r *bench.Result) {
	fmt.Fprintf(b, `<h2 id="round-%d">%s</h2>`, i, esc(r.Label))
	fmt.Fprintf(b, "<p>%s; %s</p>", esc(r.Rate), esc(paramString(r.Params)))
	// Throughput and goodput over time, on an axis as long as the round.
	xs, widths := bucketEnds(len(r.Series), r.ElapsedS)
	var tput, good, sent, eval []float64
	for s, bk := range r.Series[:len(xs)] {
		w := widths[s]
		tput, good, sent = append(tput, float64(bk.Committed)/w), append(good, float64(bk.Valid)/w), append(sent, float64(bk.Sent)/w)
		eval = append(eval, float64(bk.Evaluated)/w)
	}
	series := []line{{"sent", xs, sent}, {"committed", xs, tput}, {"VALID", xs, good}}
	if r.Evaluated > 0 {
		series = append(series, line{"evaluated", xs, eval})
	}
	b.WriteString(timeChart(fmt.Sprintf("throughput-%d", i), "throughput and goodput", "seconds into the round", "transactions per second", r.ElapsedS, series))
	// Latency CDF.
	var cdfs []line
	for _, c := range []struct {
		name string
		pts  []stats.Point
	}{{"committed", r.CDF}, {"evaluated", r.EvalCDF}} {
		if len(c.pts) == 0 {
			continue
		}
		l := line{name: c.name}
		for _, p := range c.pts {
			l.xs, l.ys = append(l.xs, p.Ms), append(l.ys, p.Fraction)
		}
		cdfs = append(cdfs, l)
	}
	b.WriteString(lineChart(fmt.Sprintf("cdf-%d", i), "end-to-end latency CDF", "milliseconds", "fraction of transactions", cdfs))
	// Latency by phase: the sub-phases of end to end (whose own figures
	// are the CDF and the table), not drawn beside their sum.
	if cats := phaseOrder(r); len(cats) > 0 {
		var p50, p95, p99 []float64
		for _, c := range cats {
			s := r.Phases[c]
			p50, p95, p99 = append(p50, s.P50), append(p95, s.P95), append(p99, s.P99)
		}
		b.WriteString(barChart(fmt.Sprintf("phases-%d", i), "latency by phase", "milliseconds", cats, []line{{"p50", nil, p50}, {"p95", nil, p95}, {"p99", nil, p99}}))
	}
	// Resources by process.
	var cpu []line
	var procs []string
	var rss []float64
	for _, p := range r.Usage.Procs {
		// One sample per whole second of the round (procstat).
		px, _ := bucketEnds(len(p.CPUSeries), float64(len(p.CPUSeries)))
		cpu = append(cpu, line{p.Name, px, p.CPUSeries})
		procs, rss = append(procs, p.Name), append(rss, p.RSSMB)
	}
	b.WriteString(timeChart(fmt.Sprintf("cpu-%d", i), "CPU by process", "seconds into the round", "% of one core", r.ElapsedS, cpu))
	b.WriteString(barChart(fmt.Sprintf("rss-%d", i), "peak resident memory by process", "MiB", procs, []line{{"RSS", nil, rss}}))
	energyHTML(b, r)
	channelsHTML(b, i, r)
	// Codes, checks and configuration.
	b.WriteString("<table><tr><th>validation code</th><th>transactions</th></tr>")
	for _, c := range r.Codes() {
		fmt.Fprintf(b, `<tr><td class="l">%s</td><td>%d</td></tr>`, esc(c), r.ByCode[c])
	}
	for _, e := range slices.Sorted(maps.Keys(r.ByError)) {
		fmt.Fprintf(b, `<tr><td class="l">not committed: %s</td><td>%d</td></tr>`, esc(e), r.ByError[e])
	}
	b.WriteString("</table><ul>")
	for _, c := range r.Checks {
		fmt.Fprintf(b, `<li class="ok">check ok: %s</li>`, esc(c))
	}
	for _, f := range r.Failures {
		fmt.Fprintf(b, `<li class="fail">CHECK FAILED: %s</li>`, esc(f))
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(b, `<li>warning: %s</li>`, esc(wn))
	}
	b.WriteString("</ul>")
	fmt.Fprintf(b, `<table id="config-%d"><tr><th>setting</th><th>value</th></tr>`, i)
	for _, kv := range configRows(r) {
		fmt.Fprintf(b, `<tr><td class="l">%s</td><td class="l">%s</td></tr>`, esc(kv[0]), esc(kv[1]))
	}
	b.WriteString("</table>")
}

func configRows(r *bench.Result) [][2]string {
	rd := r.Round
	rows := [][2]string{{"workload", r.Workload}, {"parameters", paramString(r.Params)}, {"rate", r.Rate},
		{"clients", fmt.Sprint(rd.Clients)}, {"duration", rd.Duration.String()}, {"seed", fmt.Sprint(rd.Seed)},
		{"network", r.Network}, {"channels", channelCount(r)}}
	if r.Network == "embedded" {
		rows = append(rows, [2]string{"orgs", fmt.Sprint(rd.Orgs)}, [2]string{"batch mode", rd.BatchMode},
			[2]string{"block size", fmt.Sprint(rd.BlockSize)}, [2]string{"batch timeout", rd.BatchTimeout.String()},
			[2]string{"state database", stateDB(rd.StateDB)})
	}
	rows = append(rows, [2]string{"cores", fmt.Sprint(r.Usage.Cores)}, [2]string{"strand", r.Build.String()}, [2]string{"host", r.Host.String()})
	if m := r.Usage.Machine; m.Available {
		rows = append(rows, [2]string{"machine's cores during the round", m.String()})
	}
	return rows
}

func stateDB(s string) string {
	if s == "" {
		return "pebble (default)"
	}
	return s
}
