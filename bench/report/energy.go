package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/strand-ledger/strand/bench"
)

// The energy columns of the table and the CSV: the round's total, and
// its source with the model's parameters, so that no figure travels
// without what it rests on.
func energyW(r *bench.Result) string {
	if r.Energy == nil {
		return "-"
	}
	return strconv.FormatFloat(r.Energy.Total.Watts, 'f', 2, 64)
}

func energyMJPerTx(r *bench.Result) string {
	if r.Energy == nil {
		return "-"
	}
	return strconv.FormatFloat(1e3*r.Energy.Total.JPerTx, 'f', 3, 64)
}

func energyTxPerSecPerJ(r *bench.Result) string {
	if r.Energy == nil {
		return "-"
	}
	return f1(r.Energy.Total.TxPerSecPerJ)
}

// The busy-period columns: the peers' (per peer), idle excluded; "-"
// where the round has none (an embedded network, RAPL).
func busyW(r *bench.Result) string {
	if r.Energy == nil || r.Energy.PeersBusy == nil {
		return "-"
	}
	return strconv.FormatFloat(r.Energy.PeersBusy.BusyWatts, 'f', 2, 64)
}

func busyMJPerTx(r *bench.Result) string {
	if r.Energy == nil || r.Energy.PeersBusy == nil {
		return "-"
	}
	return strconv.FormatFloat(1e3*r.Energy.PeersBusy.BusyJPerTx, 'f', 3, 64)
}

func busyTxPerSecPerJ(r *bench.Result) string {
	if r.Energy == nil || r.Energy.PeersBusy == nil {
		return "-"
	}
	return f1(r.Energy.PeersBusy.BusyTxPerSecPerJ)
}

// anyBusy says whether some round has busy-period figures.
func anyBusy(rs []*bench.Result) bool {
	for _, r := range rs {
		if r.Energy != nil && r.Energy.PeersBusy != nil {
			return true
		}
	}
	return false
}

func peersBusy(r *bench.Result) bench.ProcEnergy {
	if r.Energy == nil || r.Energy.PeersBusy == nil {
		return bench.ProcEnergy{}
	}
	return *r.Energy.PeersBusy
}

// energyRows are a round's per-process rows, then its total and the
// peers' busy figures.
func energyRows(e *bench.RunEnergy) []bench.ProcEnergy {
	rows := append(slices.Clone(e.Procs), e.Total)
	if e.PeersBusy != nil {
		rows = append(rows, *e.PeersBusy)
	}
	return rows
}

// busyCell is a busy-period figure, "-" for a row without busy periods.
func busyCell(p bench.ProcEnergy, v float64, prec int) string {
	if p.BusyS <= 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// wholeCell is a whole-interval figure, "-" for the peers' busy row.
func wholeCell(p bench.ProcEnergy, v float64, prec int) string {
	if p.Joules <= 0 && p.BusyS > 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func energySource(r *bench.Result) string {
	if r.Energy == nil {
		return "none"
	}
	return r.Energy.Label
}

// writeEnergy writes a round's energy per process and in total.
func writeEnergy(w io.Writer, r *bench.Result) {
	e := r.Energy
	if e == nil {
		return
	}
	fmt.Fprintf(w, "  energy, source %s (whole interval | busy periods only):\n", e.Label)
	for _, p := range energyRows(e) {
		fmt.Fprintf(w, "    %-40s %8s W %10s mJ/tx %9s tx/s/J | %8s W %10s mJ/tx %9s tx/s/J\n", p.Name,
			wholeCell(p, p.Watts, 2), wholeCell(p, 1e3*p.JPerTx, 3), wholeCell(p, p.TxPerSecPerJ, 1),
			busyCell(p, p.BusyWatts, 2), busyCell(p, 1e3*p.BusyJPerTx, 3), busyCell(p, p.BusyTxPerSecPerJ, 1))
	}
	for _, n := range []string{e.Note, busySourceNote(e)} {
		if n != "" {
			fmt.Fprintf(w, "    (%s)\n", n)
		}
	}
}

// energyHTML is a round's energy table.
func energyHTML(b *strings.Builder, r *bench.Result) {
	e := r.Energy
	if e == nil {
		return
	}
	fmt.Fprintf(b, `<table class="energy"><caption>energy, source: %s</caption><tr><th>process</th><th>W</th><th>mJ/tx</th><th>tx/s/J</th><th>busy W</th><th>busy mJ/tx</th><th>busy tx/s/J</th></tr>`, esc(e.Label))
	for _, p := range energyRows(e) {
		fmt.Fprintf(b, `<tr><td class="l">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>`, esc(p.Name),
			wholeCell(p, p.Watts, 2), wholeCell(p, 1e3*p.JPerTx, 3), wholeCell(p, p.TxPerSecPerJ, 1),
			busyCell(p, p.BusyWatts, 2), busyCell(p, 1e3*p.BusyJPerTx, 3), busyCell(p, p.BusyTxPerSecPerJ, 1))
	}
	b.WriteString("</table>")
	for _, n := range []string{e.Note, busySourceNote(e)} {
		if n != "" {
			fmt.Fprintf(b, "<p>%s</p>", esc(n))
		}
	}
}

// busySourceNote says where a round's busy periods came from, or why it
// has none.
func busySourceNote(e *bench.RunEnergy) string {
	if e.BusySource != "" {
		return "busy periods: " + e.BusySource + "; a process's CPU is all counted as busy, only idle core-time outside its busy periods is excluded"
	}
	return e.BusyNote
}

// compareEnergy writes the rounds' energy sources side by side and says
// when they differ: figures from two sources are not comparable.
func compareEnergy(w io.Writer, label string, a, b *bench.Result) {
	la, lb := energySource(a), energySource(b)
	fmt.Fprintf(w, "%s\tenergy source\t%s\t%s\t%s\t\n", label, la, lb, map[bool]string{true: "same", false: "DIFFERENT: energy rows not comparable"}[la == lb])
}

func energyTotal(r *bench.Result) bench.ProcEnergy {
	if r.Energy == nil {
		return bench.ProcEnergy{}
	}
	return r.Energy.Total
}
