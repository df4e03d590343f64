package report

import (
	"fmt"
	"io"
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
	fmt.Fprintf(w, "  energy, source %s:\n", e.Label)
	for _, p := range append(e.Procs, e.Total) {
		fmt.Fprintf(w, "    %-40s %8.2f W %10.3f mJ/tx %9.1f tx/s/J\n", p.Name, p.Watts, 1e3*p.JPerTx, p.TxPerSecPerJ)
	}
	if e.Note != "" {
		fmt.Fprintf(w, "    (%s)\n", e.Note)
	}
}

// energyHTML is a round's energy table.
func energyHTML(b *strings.Builder, r *bench.Result) {
	e := r.Energy
	if e == nil {
		return
	}
	fmt.Fprintf(b, `<table class="energy"><caption>energy, source: %s</caption><tr><th>process</th><th>W</th><th>mJ/tx</th><th>tx/s/J</th></tr>`, esc(e.Label))
	for _, p := range append(e.Procs, e.Total) {
		fmt.Fprintf(b, `<tr><td class="l">%s</td><td>%.2f</td><td>%.3f</td><td>%.1f</td></tr>`, esc(p.Name), p.Watts, 1e3*p.JPerTx, p.TxPerSecPerJ)
	}
	b.WriteString("</table>")
	if e.Note != "" {
		fmt.Fprintf(b, "<p>%s</p>", esc(e.Note))
	}
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
