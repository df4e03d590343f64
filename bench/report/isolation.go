package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

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
		fmt.Fprintf(w, "  %s: scheduling delay %.2f ms per slice, %.2f s per CPU-second (CPU %.0f%%)\n", n.Name, n.WaitPerSliceMs, n.WaitPerCPUS, n.CPUPercent)
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

// writeIsolationTable writes one line per round that had hogs or a
// controller: the figures QiOi compares (Alone, Together, Together with
// the controller).
func writeIsolationTable(w io.Writer, rs []*bench.Result) {
	var some bool
	for _, r := range rs {
		some = some || r.Isolation != nil
	}
	if !some {
		return
	}
	fmt.Fprintln(w, "\nisolation (delay: mean run-queue wait per time slice, each node):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "label\thogs\tk\tthroughput tx/s\tp50 ms\tp99 ms\thog Mops/s\tdelay ms\tlargest share\t")
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
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.1f\t%.1f\t%.2f\t%s\t%s\t\n", r.Label, iso.Hogs, k, r.ThroughputTPS, l.P50, l.P99,
			iso.HogOpsPerS/1e6, strings.Join(delays, " "), share)
	}
	tw.Flush()
}
