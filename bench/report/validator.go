package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/strand-ledger/strand/bench"
	"github.com/strand-ledger/strand/energy"
)

// vcol is one column of `strand bench validator`'s reports: its heading
// in the text and HTML tables, its CSV name (snake_case, the unit in the
// name), and its cell. The text and HTML cell is rounded as the table
// shows it; the CSV cell is the bare value at full precision, empty where
// the run has none (no energy, no model).
type vcol struct {
	head, csv     string
	text, csvCell func(r *bench.ValidatorResult) string
}

// vstr is a column whose cell is the same text everywhere.
func vstr(head, csv string, get func(r *bench.ValidatorResult) string) vcol {
	return vcol{head, csv, get, get}
}

// vnum is a numeric column shown with prec digits after the point.
func vnum(head, csv string, prec int, get func(r *bench.ValidatorResult) float64) vcol {
	return vcol{head, csv,
		func(r *bench.ValidatorResult) string { return strconv.FormatFloat(get(r), 'f', prec, 64) },
		func(r *bench.ValidatorResult) string { return strconv.FormatFloat(get(r), 'f', -1, 64) }}
}

// venergy is an energy column: "-" in the tables, empty in the CSV,
// where the run has no energy.
func venergy(head, csv string, prec int, get func(e *bench.ValidatorEnergy) float64) vcol {
	c := vnum(head, csv, prec, func(r *bench.ValidatorResult) float64 { return get(r.Energy) })
	text, raw := c.text, c.csvCell
	c.text = func(r *bench.ValidatorResult) string {
		if r.Energy == nil {
			return "-"
		}
		return text(r)
	}
	c.csvCell = func(r *bench.ValidatorResult) string {
		if r.Energy == nil {
			return ""
		}
		return raw(r)
	}
	return c
}

// vmodel is a model parameter column of the CSV: empty unless the run's
// energy is from the model.
func vmodel(csv string, get func(p *energy.ModelParams) string) vcol {
	cell := func(r *bench.ValidatorResult) string {
		if r.Energy == nil || r.Energy.Model == nil || r.Energy.Source != energy.SourceModel {
			return ""
		}
		return get(r.Energy.Model)
	}
	return vcol{csv, csv, cell, cell}
}

func ms(r *bench.ValidatorResult, p func(bench.Percentiles) float64) float64 {
	return p(r.Latency["total"])
}

// The columns, each defined once.
var (
	vBlockSize = vnum("block size", "block_size_txs", 0, func(r *bench.ValidatorResult) float64 { return float64(r.BlockSize) })
	vMode      = vstr("mode", "mode", func(r *bench.ValidatorResult) string { return r.Mode })
	vStateDB   = vstr("state db", "state_db", func(r *bench.ValidatorResult) string { return r.StateDB })
	vWorkers   = vcol{"workers", "workers",
		func(r *bench.ValidatorResult) string {
			if r.Workers > 0 {
				return strconv.Itoa(r.Workers)
			}
			return "all"
		},
		func(r *bench.ValidatorResult) string { return strconv.Itoa(workers(r)) }}
	vReparse = vstr("reparse", "reparse", func(r *bench.ValidatorResult) string { return strconv.FormatBool(r.Reparse) })
	vRate    = vstr("rate", "rate", func(r *bench.ValidatorResult) string { return r.Rate })
	vOffered = vstr("offered tx/s", "offered_tx_per_s", func(r *bench.ValidatorResult) string {
		if r.OfferedTPS == 0 {
			return ""
		}
		return strconv.FormatFloat(r.OfferedTPS, 'f', -1, 64)
	})
	vTxs   = vnum("txs", "txs", 0, func(r *bench.ValidatorResult) float64 { return float64(r.Txs) })
	vTPS   = vnum("committed tx/s", "committed_tx_per_s", 0, func(r *bench.ValidatorResult) float64 { return r.TPS })
	vBound = vnum("crypto bound tx/s", "crypto_bound_tx_per_s", 0, func(r *bench.ValidatorResult) float64 { return r.CryptoBoundTPS })
	vStock = vcol{"stock bound tx/s", "stock_bound_tx_per_s",
		func(r *bench.ValidatorResult) string {
			if r.StockBoundTPS == 0 {
				return "-"
			}
			return strconv.FormatFloat(r.StockBoundTPS, 'f', 0, 64)
		},
		func(r *bench.ValidatorResult) string {
			if r.StockBoundTPS == 0 {
				return ""
			}
			return strconv.FormatFloat(r.StockBoundTPS, 'f', -1, 64)
		}}
	vRatio    = withPercent(vnum("ratio", "ratio_pct", 1, func(r *bench.ValidatorResult) float64 { return 100 * r.Ratio }))
	vCPU      = vnum("CPU µs/tx", "cpu_us_per_tx", 1, func(r *bench.ValidatorResult) float64 { return 1e6 * r.CPUSecondsPerTx })
	vVerify   = vnum("verify µs/tx", "verify_cpu_us_per_tx", 1, func(r *bench.ValidatorResult) float64 { return 1e6 * r.VerifyCPUSecondsPerTx })
	vCPURatio = vnum("CPU ratio", "cpu_ratio", 2, func(r *bench.ValidatorResult) float64 { return r.CPURatio })
	vPerFsync = vnum("blocks/fsync", "blocks_per_fsync", 1, func(r *bench.ValidatorResult) float64 { return r.BlocksPerFsync })
	vP50      = vnum("p50 ms", "block_latency_p50_ms", 2, func(r *bench.ValidatorResult) float64 {
		return ms(r, func(p bench.Percentiles) float64 { return p.P50 })
	})
	vP99 = vnum("p99 ms", "block_latency_p99_ms", 2, func(r *bench.ValidatorResult) float64 {
		return ms(r, func(p bench.Percentiles) float64 { return p.P99 })
	})
	vRSS     = vnum("peak RSS MiB", "peak_rss_mib", 0, func(r *bench.ValidatorResult) float64 { return r.RSSPeakMiB })
	vCores   = vnum("cores", "machine_cores", 0, func(r *bench.ValidatorResult) float64 { return float64(r.Cores) })
	vDurable = vstr("durable", "durable", func(r *bench.ValidatorResult) string { return strconv.FormatBool(r.Durable) })

	vBusyPct = venergy("busy %", "busy_pct", 0, func(e *bench.ValidatorEnergy) float64 { return 100 * e.BusyS / max(e.WholeS, 1e-9) })
	vWholeW  = venergy("W", "whole_w", 2, func(e *bench.ValidatorEnergy) float64 { return e.WholeW })
	vBusyW   = venergy("busy W", "busy_w", 2, func(e *bench.ValidatorEnergy) float64 { return e.BusyW })
	vMJ      = venergy("mJ/tx", "whole_mj_per_tx", 3, func(e *bench.ValidatorEnergy) float64 { return 1e3 * e.JPerTx })
	vBusyMJ  = venergy("busy mJ/tx", "busy_mj_per_tx", 3, func(e *bench.ValidatorEnergy) float64 { return 1e3 * e.BusyJPerTx })
	vEff     = venergy("tx/s/J", "whole_tx_per_s_per_j", 0, func(e *bench.ValidatorEnergy) float64 { return e.TxPerSecPerJ })
	vBusyEff = venergy("busy tx/s/J", "busy_tx_per_s_per_j", 0, func(e *bench.ValidatorEnergy) float64 { return e.BusyTxPerSecPerJ })
	// vValidEff is over the study's own busy time: verify and
	// validate, the ledger write excluded (bench.ReplayEnergy.ValidationS).
	vValidEff = venergy("validation tx/s/J", "validation_tx_per_s_per_j", 0, func(e *bench.ValidatorEnergy) float64 { return e.ValidationTxPerSecPerJ })
	vMeter    = venergy("meter CPU %", "meter_cpu_pct", 2, func(e *bench.ValidatorEnergy) float64 { return 100 * e.MeterCPUShare })
	vSource   = vcol{"source", "energy_source",
		func(r *bench.ValidatorResult) string {
			if r.Energy == nil {
				return "none"
			}
			return r.Energy.Label
		},
		func(r *bench.ValidatorResult) string {
			if r.Energy == nil {
				return ""
			}
			return string(r.Energy.Source)
		}}
	vLabel = vstr("energy source", "energy_label", func(r *bench.ValidatorResult) string {
		if r.Energy == nil {
			return ""
		}
		return r.Energy.Label
	})
	vActive = vmodel("model_active_w_per_core", func(p *energy.ModelParams) string {
		return strconv.FormatFloat(p.ActiveWatts, 'f', -1, 64)
	})
	vIdle = vmodel("model_idle_w_per_core", func(p *energy.ModelParams) string {
		return strconv.FormatFloat(p.IdleWatts, 'f', -1, 64)
	})
	vModelCores = vmodel("model_cores", func(p *energy.ModelParams) string { return strconv.Itoa(p.Cores) })
)

// workers is the cores given to the peer: Workers, or all of them.
func workers(r *bench.ValidatorResult) int {
	if r.Workers > 0 {
		return r.Workers
	}
	return r.Cores
}

// The tables' columns, and the CSV's: the configuration, the throughput
// figures, then the energy figures with their source and the model's
// parameters.
var (
	validatorMain   = []vcol{vBlockSize, vMode, vStateDB, vTxs, vTPS, vBound, vStock, vRatio, vCPU, vVerify, vCPURatio, vPerFsync, vP50, vP99, vRSS}
	validatorEnergy = []vcol{vBlockSize, vMode, vWorkers, vReparse, vRate, withHead(vTPS, "tx/s"), vBusyPct, vWholeW, vBusyW, vMJ, vBusyMJ, vEff, vBusyEff, vValidEff, vMeter, vSource}
	validatorCSV    = []vcol{vBlockSize, vMode, vWorkers, vReparse, vRate, vOffered, vStateDB, vDurable, vCores, vTxs,
		vTPS, vBound, vStock, vRatio, vCPU, vVerify, vCPURatio, vPerFsync, vP50, vP99, vRSS,
		vBusyPct, vWholeW, vBusyW, vMJ, vBusyMJ, vEff, vBusyEff, vValidEff, vMeter, vSource, vLabel, vActive, vIdle, vModelCores}
)

// withPercent shows c's cells with a percent sign in the tables.
func withPercent(c vcol) vcol {
	text := c.text
	c.text = func(r *bench.ValidatorResult) string { return text(r) + "%" }
	return c
}

func withHead(c vcol, head string) vcol {
	c.head = head
	return c
}

// validatorCells is a run's row of cols: the tables' cells, or with csv
// the CSV's.
func validatorCells(cols []vcol, r *bench.ValidatorResult, csv bool) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		if csv {
			out[i] = c.csvCell(r)
		} else {
			out[i] = c.text(r)
		}
	}
	return out
}

func heads(cols []vcol, csv bool) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.head
		if csv {
			out[i] = c.csv
		}
	}
	return out
}

func hasEnergy(rs []*bench.ValidatorResult) bool {
	for _, r := range rs {
		if r.Energy != nil {
			return true
		}
	}
	return false
}

func tabRow(w io.Writer, cells []string) {
	fmt.Fprintln(w, strings.Join(cells, "\t")+"\t")
}

// WriteValidatorTable writes the validator's throughput table and its
// notes.
func WriteValidatorTable(out io.Writer, rs []*bench.ValidatorResult) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	tabRow(tw, heads(validatorMain, false))
	for _, r := range rs {
		tabRow(tw, validatorCells(validatorMain, r, false))
	}
	tw.Flush()
	if len(rs) > 0 {
		fmt.Fprintf(out, "\nEvery signature verified; durable=%v; %d cores; final state equals the model; Smallbank invariant %s\n",
			rs[0].Durable, rs[0].Cores, rs[len(rs)-1].Invariant)
		fmt.Fprintln(out, "The peer ran in its own process: CPU and peak RSS are the peer's alone.")
		fmt.Fprintln(out, "Latency is per block under saturation, from delivery to the peer until durable commit.")
		fmt.Fprintln(out, "crypto bound: every signature of the chain verified through the nodes' path (precomputed tables for known P-256 and Ed25519 keys; Ed25519 transactions in per-worker batches); ratio = committed / this bound.")
		fmt.Fprintln(out, "stock bound: the same signatures through crypto/ecdsa alone (Ed25519: one by one), for comparison; no ratio uses it.")
	}
}

const (
	validatorEnergyTitle = "Energy of the peer process (whole replay | busy periods only: the union of its verify, validate and persist intervals)"
	modelNote            = "Source model: an estimate from the peer's measured CPU time (E = active W·CPU s + idle W·(cores·t − CPU s)), not a measurement; " +
		"it cannot see frequency scaling, the uncore, DRAM, I/O devices or other tenants. Compare runs on one machine, not machines."
)

func anyModel(rs []*bench.ValidatorResult) bool {
	for _, r := range rs {
		if r.Energy != nil && r.Energy.Source == energy.SourceModel {
			return true
		}
	}
	return false
}

// WriteValidatorEnergyTable writes the energy table: per run, the peer
// process's figures over the whole replay and over its busy periods,
// each row with its source.
func WriteValidatorEnergyTable(out io.Writer, rs []*bench.ValidatorResult) {
	if !hasEnergy(rs) {
		return
	}
	fmt.Fprintf(out, "\n%s:\n", validatorEnergyTitle)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	tabRow(tw, heads(validatorEnergy, false))
	for _, r := range rs {
		if r.Energy != nil {
			tabRow(tw, validatorCells(validatorEnergy, r, false))
		}
	}
	tw.Flush()
	if anyModel(rs) {
		first, rest, _ := strings.Cut(modelNote, "; ")
		fmt.Fprintln(out, first+";")
		fmt.Fprintln(out, rest)
	}
	WriteValidatorRateMedians(out, rs)
}

// WriteValidatorCSV writes a header and one row per run: its
// configuration, throughput and energy, each energy row with its source
// (rapl or model), its label and, for the model, its parameters.
func WriteValidatorCSV(w io.Writer, rs []*bench.ValidatorResult) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(heads(validatorCSV, true)); err != nil {
		return err
	}
	for _, r := range rs {
		if err := cw.Write(validatorCells(validatorCSV, r, true)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteValidatorHTML writes a self-contained, well-formed XHTML page: the
// throughput table, the energy table with each row's source, and a
// chart of tx/s/J over the whole replay and over its busy periods per
// run (numbered as in the tables).
func WriteValidatorHTML(w io.Writer, title string, rs []*bench.ValidatorResult) error {
	var b strings.Builder
	pageStart(&b, title)
	htmlTable(&b, "validator", "", validatorMain, rs)
	if hasEnergy(rs) {
		var ers []*bench.ValidatorResult
		for _, r := range rs {
			if r.Energy != nil {
				ers = append(ers, r)
			}
		}
		htmlTable(&b, "energy", validatorEnergyTitle, validatorEnergy, ers)
		var cats []string
		var whole, busy []float64
		for i, r := range ers {
			cats = append(cats, strconv.Itoa(i+1))
			whole, busy = append(whole, r.Energy.TxPerSecPerJ), append(busy, r.Energy.BusyTxPerSecPerJ)
		}
		b.WriteString(barChart("tx-per-s-per-j", "tx/s/J per run (energy table's rows)", "tx/s/J", cats,
			[]line{{"whole replay", nil, whole}, {"busy periods", nil, busy}}))
		if anyModel(ers) {
			fmt.Fprintf(&b, "<p>%s</p>", esc(modelNote))
		}
	}
	if len(rs) > 0 {
		fmt.Fprintf(&b, "<p><small>%s</small></p>", esc(fmt.Sprintf("Every signature verified; durable=%v; %d cores; final state equals the model; Smallbank invariant %s. The peer ran in its own process.",
			rs[0].Durable, rs[0].Cores, rs[len(rs)-1].Invariant)))
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// htmlTable writes one of the validator's tables, its rows numbered;
// text cells are aligned left, numbers right.
func htmlTable(b *strings.Builder, class, caption string, cols []vcol, rs []*bench.ValidatorResult) {
	fmt.Fprintf(b, `<table class="%s">`, esc(class))
	if caption != "" {
		fmt.Fprintf(b, "<caption>%s</caption>", esc(caption))
	}
	b.WriteString("<tr><th>run</th>")
	for _, h := range heads(cols, false) {
		fmt.Fprintf(b, "<th>%s</th>", esc(h))
	}
	b.WriteString("</tr>")
	for i, r := range rs {
		fmt.Fprintf(b, "<tr><td>%d</td>", i+1)
		for _, c := range validatorCells(cols, r, false) {
			cls := ""
			if _, err := strconv.ParseFloat(strings.TrimSuffix(c, "%"), 64); err != nil && c != "-" && c != "all" {
				cls = ` class="l"`
			}
			fmt.Fprintf(b, "<td%s>%s</td>", cls, esc(c))
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
}
