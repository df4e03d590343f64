package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/strand-ledger/strand/bench"
)

// writeIsolation writes a round's hogs, nodes' scheduling and controller
// lines (nothing for a round without them).
func writeIsolation(w io.Writer, r *bench.Result) {
	iso := r.Isolation
	if iso == nil {
		return
	}
	if iso.Hogs > 0 {
		fmt.Fprintf(w, "  hogs: %d, %.3g ops/s together over %.1f s\n", iso.Hogs, iso.HogOpsPerS, iso.HogWindowS)
	}
	for _, n := range iso.Nodes {
		fmt.Fprintf(w, "  %s: scheduling delay %.2f ms per slice, %.2f s per CPU-second (CPU %.0f%%", n.Name, n.WaitPerSliceMs, n.WaitPerCPUS, n.CPUPercent)
		if n.QuotaCores > 0 {
			fmt.Fprintf(w, " of a %.0f%% quota, throttled in %.0f%% of its periods", 100*n.QuotaCores, n.ThrottledPct)
		}
		fmt.Fprintln(w, ")")
	}
	for role, q := range iso.Quota {
		fmt.Fprintf(w, "  cpu quota: each %s %.2f cores\n", role, q)
	}
	if c := iso.Controller; c != nil {
		fmt.Fprintf(w, "  controller: k %g, delay target %s, threshold %.0f tx/s; %d decisions over %d samples, mean delay %.2f ms, largest share %d",
			c.K, c.DelayTarget, c.Threshold, c.Decisions, c.Samples, c.MeanDelayMs, c.MaxShares)
		switch {
		case r.Round.HogsStop > 0 && c.DefaultAfterStopS < 0:
			fmt.Fprint(w, "; shares NOT back at the default by the round's end")
		case r.Round.HogsStop > 0:
			fmt.Fprintf(w, "; shares back at the default %.1f s after the hogs stopped", c.DefaultAfterStopS)
		}
		fmt.Fprintln(w)
	}
}

// isolationHeader is the isolation table's columns, for the text and the
// HTML report alike.
var isolationHeader = []string{"label", "hogs", "k", "throughput tx/s", "p50 ms", "p99 ms", "hog Mops/s", "delay ms", "largest share"}

// isolationCaption says what the delay column is.
const isolationCaption = "isolation (delay: mean run-queue wait per time slice, each node)"

// isolationRows is one row of cells per round that had hogs or a
// controller: the figures QiOi compares (Alone, Together, Together with
// the controller). None when no round had them.
func isolationRows(rs []*bench.Result) [][]string {
	var rows [][]string
	for _, r := range rs {
		iso := r.Isolation
		if iso == nil {
			continue
		}
		k, share := "-", "-"
		if c := iso.Controller; c != nil {
			k, share = fmt.Sprintf("%g", c.K), fmt.Sprint(c.MaxShares)
		}
		var delays []string
		for _, n := range iso.Nodes {
			delays = append(delays, fmt.Sprintf("%.2f", n.WaitPerSliceMs))
		}
		l := latency(r)
		rows = append(rows, []string{r.Label, fmt.Sprint(iso.Hogs), k, fmt.Sprintf("%.0f", r.ThroughputTPS),
			fmt.Sprintf("%.1f", l.P50), fmt.Sprintf("%.1f", l.P99), fmt.Sprintf("%.2f", iso.HogOpsPerS/1e6),
			strings.Join(delays, " "), share})
	}
	return rows
}

// writeIsolationTable writes the isolation table (nothing when no round
// had hogs or a controller).
func writeIsolationTable(w io.Writer, rs []*bench.Result) {
	writeRowTable(w, isolationCaption, isolationHeader, isolationRows(rs))
}

// isolationHTML is the isolation table (nothing when no round had hogs
// or a controller), then, for each round whose controller recorded its
// periods, charts of its decisions over the load.
func isolationHTML(b *strings.Builder, rs []*bench.Result) {
	rows := isolationRows(rs)
	if len(rows) == 0 {
		return
	}
	rowTableHTML(b, "isolation", isolationCaption, isolationHeader, rows)
	for i, r := range rs {
		if r.Isolation != nil && r.Isolation.Controller != nil && len(r.Isolation.Controller.Periods) > 0 {
			controllerCharts(b, i, r)
		}
	}
}

// controllerCharts draws a round's control periods: each component's
// share, the throughput against the objective, and the scheduling delay
// and p99 latency the controller measured, each point at its period's
// end.
func controllerCharts(b *strings.Builder, i int, r *bench.Result) {
	ps := r.Isolation.Controller.Periods
	var comps []string
	for _, p := range ps {
		for c := range p.Shares {
			if !slices.Contains(comps, c) {
				comps = append(comps, c)
			}
		}
	}
	slices.Sort(comps)
	series := func(name string, get func(bench.ControllerPeriod) float64) line {
		l := line{name: name}
		for _, p := range ps {
			l.xs, l.ys = append(l.xs, p.T), append(l.ys, get(p))
		}
		return l
	}
	var shares []line
	for _, c := range comps {
		shares = append(shares, series(c, func(p bench.ControllerPeriod) float64 { return float64(p.Shares[c]) }))
	}
	fmt.Fprintf(b, `<h3>%s: the controller's periods</h3>`, esc(r.Label))
	b.WriteString(timeChart(fmt.Sprintf("controller-shares-%d", i), "CPU share by component", "seconds into the load", "share (1024: default)", r.ElapsedS, shares))
	b.WriteString(timeChart(fmt.Sprintf("controller-throughput-%d", i), "measured throughput and objective", "seconds into the load", "transactions per second", r.ElapsedS, []line{
		series("throughput", func(p bench.ControllerPeriod) float64 { return p.Throughput }),
		series("threshold", func(p bench.ControllerPeriod) float64 { return p.Threshold }),
	}))
	b.WriteString(timeChart(fmt.Sprintf("controller-delay-%d", i), "scheduling delay and p99 commit latency", "seconds into the load", "milliseconds", r.ElapsedS, []line{
		series("delay per slice", func(p bench.ControllerPeriod) float64 { return p.DelayMs }),
		series("p99", func(p bench.ControllerPeriod) float64 { return p.P99Ms }),
	}))
}
