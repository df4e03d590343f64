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
	"time"

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

// column is one per-round figure of the table and the CSV: name is the
// table's header (with units), csv the CSV's (snake_case, units in the
// name), and shown, if set, says whether the table shows it for rs (a
// column of zeros says nothing).
type column struct {
	name, csv string
	get       func(r *bench.Result) string
	shown     func(rs []*bench.Result) bool
}

// columns are the table's and the CSV's per-round figures: Caliper's
// (succeeded, failed, send rate, min/avg/max latency, throughput) and
// strand's.
var columns = []column{
	{name: "label", csv: "label", get: func(r *bench.Result) string { return r.Label }},
	{name: "workload", csv: "workload", get: func(r *bench.Result) string { return r.Workload }},
	{name: "clients", csv: "clients", get: func(r *bench.Result) string { return strconv.Itoa(r.Round.Clients) }},
	{name: "seconds", csv: "seconds", get: func(r *bench.Result) string { return f1(r.ElapsedS) }},
	{name: "succeeded", csv: "succeeded", get: func(r *bench.Result) string { return strconv.FormatInt(r.Valid+r.Evaluated, 10) }},
	{name: "failed", csv: "failed", get: func(r *bench.Result) string { return strconv.FormatInt(failed(r), 10) }},
	{name: "sent/s", csv: "send_tps", get: func(r *bench.Result) string { return f0(r.SendTPS) }},
	{name: "throughput tx/s", csv: "throughput_tps", get: func(r *bench.Result) string { return f0(r.ThroughputTPS) }},
	{name: "goodput tx/s", csv: "goodput_tps", get: func(r *bench.Result) string { return f0(r.GoodputTPS) }},
	{name: "evaluations/s", csv: "evaluate_tps", get: func(r *bench.Result) string { return f0(r.EvaluateTPS) },
		shown: func(rs []*bench.Result) bool {
			return slices.ContainsFunc(rs, func(r *bench.Result) bool { return r.Evaluated > 0 })
		}},
	{name: "min ms", csv: "latency_min_ms", get: func(r *bench.Result) string { return f1(latency(r).Min) }},
	{name: "avg ms", csv: "latency_avg_ms", get: func(r *bench.Result) string { return f1(latency(r).Mean) }},
	{name: "p50 ms", csv: "latency_p50_ms", get: func(r *bench.Result) string { return f1(latency(r).P50) }},
	{name: "p95 ms", csv: "latency_p95_ms", get: func(r *bench.Result) string { return f1(latency(r).P95) }},
	{name: "p99 ms", csv: "latency_p99_ms", get: func(r *bench.Result) string { return f1(latency(r).P99) }},
	{name: "max ms", csv: "latency_max_ms", get: func(r *bench.Result) string { return f1(latency(r).Max) }},
	{name: "conflicts", csv: "conflicts", get: func(r *bench.Result) string { return strconv.FormatInt(conflicts(r), 10) }},
	{name: "errors", csv: "errors", get: func(r *bench.Result) string { return strconv.FormatInt(r.Errors, 10) }},
	{name: "CPU %", csv: "cpu_percent", get: func(r *bench.Result) string { return f0(sum(r.CPUPercent)) }},
	{name: "RSS MiB", csv: "rss_mib", get: func(r *bench.Result) string { return f0(sum(r.RSSMB)) }},
	{name: "W", csv: "energy_watts", get: energyW},
	{name: "mJ/tx", csv: "energy_mj_per_tx", get: energyMJPerTx},
	{name: "tx/s/J", csv: "tx_per_s_per_j", get: energyTxPerSecPerJ},
	{name: "busy W", csv: "busy_energy_watts", get: busyW, shown: anyBusy},
	{name: "busy mJ/tx", csv: "busy_energy_mj_per_tx", get: busyMJPerTx, shown: anyBusy},
	{name: "busy tx/s/J", csv: "busy_tx_per_s_per_j", get: busyTxPerSecPerJ, shown: anyBusy},
	{name: "energy source", csv: "energy_source", get: energySource},
	{name: "checks", csv: "checks", get: func(r *bench.Result) string {
		if r.Passed() {
			return "ok"
		}
		return "FAILED"
	}},
}

// failed counts the round's transactions that did not succeed: committed
// with another code than VALID, or refused or lost before commit.
func failed(r *bench.Result) int64 { return r.Committed - r.Valid + r.Errors }

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
	cols := slices.DeleteFunc(slices.Clone(columns), func(c column) bool { return c.shown != nil && !c.shown(rs) })
	for _, c := range cols {
		fmt.Fprint(tw, c.name+"\t")
	}
	fmt.Fprintln(tw)
	for _, r := range rs {
		for _, c := range cols {
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
		writeChannelCodes(w, r)
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
	writeChannelsTable(w, rs)
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

// WriteCSV writes tidy CSV: a header of snake_case names with their units
// in them, then one row per round: its configuration (network knobs,
// build, host), the table's figures, one column per validation code and
// one per workload parameter (the union over the rounds; empty where a
// round has none). A round against --net leaves the network knobs it did
// not set empty.
func WriteCSV(w io.Writer, rs []*bench.Result) error {
	var codes, params []string
	for _, r := range rs {
		codes = append(codes, r.Codes()...)
		params = append(params, slices.Collect(maps.Keys(r.Params))...)
		for _, c := range r.Channels {
			codes = append(codes, c.Codes()...)
			params = append(params, slices.Collect(maps.Keys(c.Params))...)
		}
	}
	slices.Sort(codes)
	slices.Sort(params)
	codes, params = slices.Compact(codes), slices.Compact(params)
	cw := csv.NewWriter(w)
	head := append(slices.Clone(configHead), "channels", "channel")
	for _, c := range columns {
		head = append(head, c.csv)
	}
	for _, c := range codes {
		head = append(head, "code_"+c)
	}
	for _, p := range params {
		head = append(head, "param_"+p)
	}
	for _, c := range tiersCSV {
		head = append(head, c.name)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	write := func(r *bench.Result, channels, channel string, tiers []string) error {
		row := append(configRow(r), channels, channel)
		for _, c := range columns {
			row = append(row, c.get(r))
		}
		for _, c := range codes {
			row = append(row, strconv.FormatInt(r.ByCode[c], 10))
		}
		for _, p := range params {
			row = append(row, r.Params[p])
		}
		return cw.Write(append(row, tiers...))
	}
	for _, r := range rs {
		if err := write(r, channelCount(r), "", tiersCells(r)); err != nil {
			return err
		}
		for _, c := range r.Channels {
			if err := write(channelOf(r, c), channelCount(r), c.Channel, make([]string, len(tiersCSV))); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// configHead names the configuration columns of the CSV (configRow).
var configHead = []string{"network", "rate", "orgs", "batch_mode", "block_size", "batch_timeout_ms", "state_db",
	"strand_version", "commit", "go_version", "host", "cores", "cpu_model", "started"}

func configRow(r *bench.Result) []string {
	rd := r.Round
	num := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	timeout := ""
	if rd.BatchTimeout > 0 {
		timeout = strconv.FormatFloat(float64(rd.BatchTimeout)/float64(time.Millisecond), 'f', -1, 64)
	}
	started := ""
	if !r.Host.Started.IsZero() {
		started = r.Host.Started.Format(time.RFC3339)
	}
	return []string{r.Network, r.Rate, num(rd.Orgs), rd.BatchMode, num(rd.BlockSize), timeout, rd.StateDB,
		r.Build.Version, r.Build.ShortCommit(), r.Build.GoVersion, r.Host.Name, num(r.Host.Cores), r.Host.CPUModel, started}
}

// Compare writes rounds of a and b side by side, matched by label (or by
// position where labels differ), with b/a ratios: first, per pair, what
// differs between them besides the figures (configuration, build,
// machine, and the hypervisor's steal, which must match for the ratios to
// mean anything), so that a ratio is never read without its cause.
func Compare(w io.Writer, a, b []*bench.Result) {
	byLabel := map[string]*bench.Result{}
	for _, r := range b {
		byLabel[r.Label] = r
	}
	for i, ra := range a {
		rb, ok := byLabel[ra.Label]
		if !ok && i < len(b) {
			rb = b[i]
		}
		if rb != nil {
			compareSetup(w, ra, rb)
		}
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
			{"busy W (per peer)", func(r *bench.Result) float64 { return peersBusy(r).BusyWatts }},
			{"busy mJ/tx (per peer)", func(r *bench.Result) float64 { return 1e3 * peersBusy(r).BusyJPerTx }},
			{"busy tx/s/J (per peer)", func(r *bench.Result) float64 { return peersBusy(r).BusyTxPerSecPerJ }},
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
		compareChannels(tw, ra.Label, ra, rb)
	}
	tw.Flush()
}

// compareSetup writes what differs between two rounds' setups, and their
// steal, before their figures.
func compareSetup(w io.Writer, a, b *bench.Result) {
	ca, cb := setupRows(a), setupRows(b)
	var diffs []string
	for i := range ca {
		if ca[i][1] != cb[i][1] {
			diffs = append(diffs, fmt.Sprintf("    %s: A %s, B %s", ca[i][0], orDash(ca[i][1]), orDash(cb[i][1])))
		}
	}
	label := a.Label
	if b.Label != a.Label {
		label += " / " + b.Label
	}
	if len(diffs) == 0 {
		fmt.Fprintf(w, "%s: same configuration, build and machine\n", label)
	} else {
		fmt.Fprintf(w, "%s: DIFFERENT setups\n%s\n", label, strings.Join(diffs, "\n"))
	}
	ma, mb := a.Usage.Machine, b.Usage.Machine
	if ma.Available && mb.Available {
		note := ""
		if d := ma.StealPct - mb.StealPct; d > 2 || d < -2 {
			note = " (more than 2 points apart: the machine was not the same; run again)"
		}
		fmt.Fprintf(w, "    steal: A %.1f%%, B %.1f%%%s\n", ma.StealPct, mb.StealPct, note)
	}
}

// setupRows are a round's setup as compareSetup compares it.
func setupRows(r *bench.Result) [][2]string {
	rd := r.Round
	return [][2]string{
		{"workload", r.Workload}, {"parameters", paramString(r.Params)}, {"rate", r.Rate},
		{"clients", strconv.Itoa(rd.Clients)}, {"duration", rd.Duration.String()}, {"network", r.Network}, {"channels", channelCount(r)},
		{"orgs", strconv.Itoa(rd.Orgs)}, {"batch mode", rd.BatchMode}, {"block size", strconv.Itoa(rd.BlockSize)},
		{"batch timeout", rd.BatchTimeout.String()}, {"state database", rd.StateDB},
		{"strand", r.Build.Version + " " + r.Build.ShortCommit()}, {"go", r.Build.GoVersion},
		{"host", r.Host.Name}, {"cores", strconv.Itoa(r.Usage.Cores)}, {"cpu", r.Host.CPUModel},
	}
}

func orDash(s string) string {
	if s == "" || s == "0" || s == "0s" {
		return "-"
	}
	return s
}
