package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/strand-ledger/strand/bench"
)

// rateGroup is the replays of one configuration at one rate.
type rateGroup struct {
	config, rate   string
	cpu, whole, bz []float64 // CPU µs/tx, whole and busy tx/s/J
	// vz is tx/s/J over the study's own busy time (the ledger
	// write excluded: bench.ReplayEnergy.ValidationS).
	vz []float64
	// The busy joules' split (model figures only): CPU µs/tx charged
	// to busy periods, and the idle cores' share of the busy joules.
	busyCPU, idleShare []float64
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// rateGroups groups the runs with energy by configuration and rate, in
// the order each group first appears.
func rateGroups(rs []*bench.ValidatorResult) []*rateGroup {
	var out []*rateGroup
	for _, r := range rs {
		if r.Energy == nil {
			continue
		}
		config := fmt.Sprintf("block size %d, %s, workers %s, reparse %t", r.BlockSize, r.Mode, workersCell(r.Workers), r.Reparse)
		i := slices.IndexFunc(out, func(g *rateGroup) bool { return g.config == config && g.rate == r.Rate })
		if i < 0 {
			out, i = append(out, &rateGroup{config: config, rate: r.Rate}), len(out)
		}
		g := out[i]
		g.cpu = append(g.cpu, 1e6*r.CPUSecondsPerTx)
		g.whole = append(g.whole, r.Energy.TxPerSecPerJ)
		g.bz = append(g.bz, r.Energy.BusyTxPerSecPerJ)
		g.vz = append(g.vz, r.Energy.ValidationTxPerSecPerJ)
		if sp := r.Energy.BusySplit; sp != nil {
			g.busyCPU = append(g.busyCPU, 1e6*sp.CPUPerTxS)
			g.idleShare = append(g.idleShare, 100*sp.IdleCoreShare)
		}
	}
	return out
}

func workersCell(w int) string {
	if w == 0 {
		return "all"
	}
	return fmt.Sprint(w)
}

// WriteValidatorRateMedians writes, where some rate was replayed more
// than once (--rate 100%,50%,25%,100%,...), each rate's medians, and per
// configuration how far apart the paced rates' busy-period medians are,
// and their validation medians (the study's own busy time): the
// idle-exclusion target's figure (within 10%), strict and as the study
// took it. Nothing otherwise.
func WriteValidatorRateMedians(out io.Writer, rs []*bench.ValidatorResult) {
	gs := rateGroups(rs)
	if !slices.ContainsFunc(gs, func(g *rateGroup) bool { return len(g.bz) > 1 }) {
		return
	}
	fmt.Fprintln(out, "\nMedians by rate (the same chain replayed several times at each):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "configuration\trate\treplays\tCPU µs/tx\ttx/s/J\tbusy tx/s/J\tbusy range\tbusy CPU µs/tx\tidle cores % of busy J\tvalidation tx/s/J\t")
	for _, g := range gs {
		split := "-\t-"
		if len(g.busyCPU) == len(g.bz) {
			split = fmt.Sprintf("%.1f\t%.1f", median(g.busyCPU), median(g.idleShare))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.0f\t%.0f\t%.0f-%.0f\t%s\t%.0f\t\n", g.config, g.rate, len(g.bz), median(g.cpu), median(g.whole), median(g.bz),
			slices.Min(g.bz), slices.Max(g.bz), split, median(g.vz))
	}
	tw.Flush()
	fmt.Fprintln(out, "(busy CPU µs/tx and the idle cores' share: the model's busy joules taken apart, medians; see bench.BusySplit;")
	fmt.Fprintln(out, " validation: over the study's own busy time, verify and validate, the ledger write left out as its §III-D does)")
	var configs []string
	for _, g := range gs {
		if !slices.Contains(configs, g.config) {
			configs = append(configs, g.config)
		}
	}
	for _, c := range configs {
		var paced []*rateGroup
		for _, g := range gs {
			if g.config == c && g.rate != "max" {
				paced = append(paced, g)
			}
		}
		if meds, spread, ok := spreadOf(paced, func(g *rateGroup) []float64 { return g.bz }); ok {
			wholes, _, _ := spreadOf(paced, func(g *rateGroup) []float64 { return g.whole })
			fmt.Fprintf(out, "%s: busy tx/s/J medians of the paced rates %s: the largest %.1f%% above the smallest (whole interval: %s)\n",
				c, meds, spread, wholes)
		}
		if meds, spread, ok := spreadOf(paced, func(g *rateGroup) []float64 { return g.vz }); ok {
			fmt.Fprintf(out, "%s: validation tx/s/J medians of the paced rates %s: the largest %.1f%% above the smallest\n", c, meds, spread)
		}
	}
}

// spreadOf lists the medians of one figure over groups and says how far
// the largest lies above the smallest, in percent; ok is false for fewer
// than two groups or a median that is not positive.
func spreadOf(gs []*rateGroup, fig func(*rateGroup) []float64) (meds string, spread float64, ok bool) {
	var ms []string
	lo, hi := 0.0, 0.0
	for i, g := range gs {
		m := median(fig(g))
		if i == 0 || m < lo {
			lo = m
		}
		hi = max(hi, m)
		ms = append(ms, fmt.Sprintf("%.0f", m))
	}
	if len(ms) < 2 || lo <= 0 {
		return strings.Join(ms, ", "), 0, false
	}
	return strings.Join(ms, ", "), 100 * (hi - lo) / lo, true
}
