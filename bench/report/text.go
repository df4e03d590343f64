package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/strand-ledger/strand/bench"
	"github.com/strand-ledger/strand/bench/stats"
)

// File is the JSON file's content.
type File struct {
	Rounds []*bench.Result `json:"rounds"`
}

// WriteJSON writes the results as a File.
func WriteJSON(w io.Writer, rs []*bench.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(File{Rounds: rs})
}

// ReadJSON reads a file WriteJSON wrote.
func ReadJSON(path string) ([]*bench.Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("report: %s: %v: want a file `strand bench --json` wrote", path, err)
	}
	if len(f.Rounds) == 0 {
		return nil, fmt.Errorf("report: %s holds no rounds: want a file `strand bench --json` wrote", path)
	}
	return f.Rounds, nil
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// conflicts counts MVCC and phantom read conflicts.
func conflicts(r *bench.Result) int64 {
	return r.ByCode["MVCC_READ_CONFLICT"] + r.ByCode["PHANTOM_READ_CONFLICT"]
}

// columns are the table's and the CSV's per-round figures.
var columns = []struct {
	name string
	get  func(r *bench.Result) string
}{
	{"label", func(r *bench.Result) string { return r.Label }},
	{"workload", func(r *bench.Result) string { return r.Workload }},
	{"clients", func(r *bench.Result) string { return strconv.Itoa(r.Round.Clients) }},
	{"seconds", func(r *bench.Result) string { return f1(r.ElapsedS) }},
	{"sent/s", func(r *bench.Result) string { return f0(r.SendTPS) }},
	{"throughput tx/s", func(r *bench.Result) string { return f0(r.ThroughputTPS) }},
	{"goodput tx/s", func(r *bench.Result) string { return f0(r.GoodputTPS) }},
	{"evaluations/s", func(r *bench.Result) string { return f0(r.EvaluateTPS) }},
	{"p50 ms", func(r *bench.Result) string { return f1(latency(r).P50) }},
	{"p95 ms", func(r *bench.Result) string { return f1(latency(r).P95) }},
	{"p99 ms", func(r *bench.Result) string { return f1(latency(r).P99) }},
	{"max ms", func(r *bench.Result) string { return f1(latency(r).Max) }},
	{"conflicts", func(r *bench.Result) string { return strconv.FormatInt(conflicts(r), 10) }},
	{"errors", func(r *bench.Result) string { return strconv.FormatInt(r.Errors, 10) }},
	{"CPU %", func(r *bench.Result) string { return f0(sum(r.CPUPercent)) }},
	{"RSS MiB", func(r *bench.Result) string { return f0(sum(r.RSSMB)) }},
	{"W", energyW},
	{"mJ/tx", energyMJPerTx},
	{"tx/s/J", energyTxPerSecPerJ},
	{"energy source", energySource},
	{"checks", func(r *bench.Result) string {
		if r.Passed() {
			return "ok"
		}
		return "FAILED"
	}},
}

// latency is the round's committed latency, or its evaluations' where
// nothing was committed (a query-only round).
func latency(r *bench.Result) stats.Summary {
	if r.Latency.Count == 0 {
		return r.EvalLat
	}
	return r.Latency
}

func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// WriteTable writes one line per round, then each round's codes, checks
// and warnings.
func WriteTable(w io.Writer, rs []*bench.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, c := range columns {
		fmt.Fprint(tw, c.name+"\t")
	}
	fmt.Fprintln(tw)
	for _, r := range rs {
		for _, c := range columns {
			fmt.Fprint(tw, c.get(r)+"\t")
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, r := range rs {
		fmt.Fprintf(w, "\n%s: %s, %s\n", r.Label, r.Rate, paramString(r.Params))
		for _, c := range r.Codes() {
			fmt.Fprintf(w, "  %-28s %10d\n", c, r.ByCode[c])
		}
		for _, e := range slices.Sorted(maps.Keys(r.ByError)) {
			fmt.Fprintf(w, "  %-28s %10d   (first: %s)\n", "not committed: "+e, r.ByError[e], clip(r.Examples[e], 200))
		}
		if len(r.Phases) > 0 {
			fmt.Fprintf(w, "  phases p50/p99 ms:")
			for _, p := range phaseOrder(r) {
				fmt.Fprintf(w, " %s %.1f/%.1f", p, r.Phases[p].P50, r.Phases[p].P99)
			}
			fmt.Fprintln(w)
		}
		if len(r.Steps) > 0 {
			fmt.Fprint(w, "  steps (offered → committed tx/s):")
			for _, s := range r.Steps {
				fmt.Fprintf(w, " %.0f→%.0f", s.Rate, s.Throughput)
			}
			fmt.Fprintln(w)
			if r.Knee != nil {
				fmt.Fprintf(w, "  knee: %.0f tps offered, %.0f tx/s committed\n", r.Knee.Rate, r.Knee.Throughput)
			} else {
				fmt.Fprintln(w, "  no knee within the round: throughput still grew at the last step (lengthen the round)")
			}
		}
		for _, p := range r.Usage.Procs {
			io := "disk n/a"
			if p.IOKnown {
				io = fmt.Sprintf("disk read %.1f MiB, written %.1f MiB", p.DiskReadMB, p.DiskWriteMB)
			}
			fmt.Fprintf(w, "  %s: CPU %.0f%%, RSS %.0f MiB, %s\n", p.Name, p.CPUPercent, p.RSSMB, io)
		}
		writeEnergy(w, r)
		fmt.Fprintf(w, "  network (namespace): received %.1f MiB, sent %.1f MiB\n", r.Usage.NetRxMB, r.Usage.NetTxMB)
		if m := r.Usage.Machine; m.Available {
			fmt.Fprintf(w, "  machine (%d cores): %s\n", r.Usage.Cores, m)
		}
		writeIsolation(w, r)
		writeTiers(w, r)
		for _, c := range r.Checks {
			fmt.Fprintf(w, "  check ok: %s\n", c)
		}
		for _, f := range r.Failures {
			fmt.Fprintf(w, "  CHECK FAILED: %s\n", f)
		}
		for _, wn := range r.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", wn)
		}
	}
	writeIsolationTable(w, rs)
	writeTiersTable(w, rs)
}

// clip shortens s to at most n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// phaseOrder lists a round's phases in pipeline order.
func phaseOrder(r *bench.Result) []string {
	var out []string
	for _, p := range []string{"endorse", "submit", "commit", "verify", "validate", "persist"} {
		if _, ok := r.Phases[p]; ok {
			out = append(out, p)
		}
	}
	return out
}

func paramString(p map[string]string) string {
	parts := make([]string, 0, len(p))
	for _, k := range slices.Sorted(maps.Keys(p)) {
		parts = append(parts, k+"="+p[k])
	}
	return strings.Join(parts, " ")
}

// WriteCSV writes a header and one row per round: the table's columns,
// then the counts by validation code as CODE=n pairs.
func WriteCSV(w io.Writer, rs []*bench.Result) error {
	cw := csv.NewWriter(w)
	head := make([]string, 0, len(columns)+2)
	for _, c := range columns {
		head = append(head, c.name)
	}
	head = append(head, "by_code", "params")
	for _, c := range tiersCSV {
		head = append(head, c.name)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, r := range rs {
		row := make([]string, 0, len(head)+2)
		for _, c := range columns {
			row = append(row, c.get(r))
		}
		codes := make([]string, 0, len(r.ByCode))
		for _, c := range r.Codes() {
			codes = append(codes, fmt.Sprintf("%s=%d", c, r.ByCode[c]))
		}
		row = append(row, strings.Join(codes, ";"), paramString(r.Params))
		if err := cw.Write(append(row, tiersCells(r)...)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Compare writes rounds of a and b side by side, matched by label (or by
// position where labels differ), with b/a ratios.
func Compare(w io.Writer, a, b []*bench.Result) {
	byLabel := map[string]*bench.Result{}
	for _, r := range b {
		byLabel[r.Label] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tfigure\tA\tB\tB/A\t")
	for i, ra := range a {
		rb, ok := byLabel[ra.Label]
		if !ok && i < len(b) {
			rb = b[i]
		}
		if rb == nil {
			fmt.Fprintf(tw, "%s\t(not in B)\t\t\t\t\n", ra.Label)
			continue
		}
		for _, m := range []struct {
			name string
			get  func(*bench.Result) float64
		}{
			{"throughput tx/s", func(r *bench.Result) float64 { return r.ThroughputTPS }},
			{"goodput tx/s", func(r *bench.Result) float64 { return r.GoodputTPS }},
			{"evaluations/s", func(r *bench.Result) float64 { return r.EvaluateTPS }},
			{"p50 ms", func(r *bench.Result) float64 { return latency(r).P50 }},
			{"p95 ms", func(r *bench.Result) float64 { return latency(r).P95 }},
			{"p99 ms", func(r *bench.Result) float64 { return latency(r).P99 }},
			{"CPU %", func(r *bench.Result) float64 { return sum(r.CPUPercent) }},
			{"RSS MiB", func(r *bench.Result) float64 { return sum(r.RSSMB) }},
			{"energy W", func(r *bench.Result) float64 { return energyTotal(r).Watts }},
			{"energy mJ/tx", func(r *bench.Result) float64 { return 1e3 * energyTotal(r).JPerTx }},
			{"tx/s/J", func(r *bench.Result) float64 { return energyTotal(r).TxPerSecPerJ }},
		} {
			va, vb := m.get(ra), m.get(rb)
			ratio := "-"
			if va != 0 {
				ratio = fmt.Sprintf("%.2f", vb/va)
			}
			label := ra.Label
			if rb.Label != ra.Label {
				label += " / " + rb.Label
			}
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%s\t\n", label, m.name, va, vb, ratio)
		}
		compareEnergy(tw, ra.Label, ra, rb)
	}
	tw.Flush()
}
