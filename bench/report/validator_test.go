package report

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/bench"
	"github.com/strand-ledger/strand/energy"
)

func validatorResults() []*bench.ValidatorResult {
	p := energy.ModelParams{ActiveWatts: 8.5, IdleWatts: 1.25, Cores: 2}
	model := &bench.ValidatorEnergy{
		ReplayEnergy: bench.ReplayEnergy{Source: energy.SourceModel, Model: &p, WholeS: 2, WholeJ: 20, BusyS: 1.5, BusyJ: 18, MeterCPUS: 0.01},
		Label:        energy.Label(energy.SourceModel, &p), WholeW: 10, BusyW: 12, JPerTx: 0.02, BusyJPerTx: 0.018,
		TxPerSecPerJ: 25.5, BusyTxPerSecPerJ: 37.25, ValidationTxPerSecPerJ: 41.5, MeterCPUShare: 0.0042,
	}
	rapl := &bench.ValidatorEnergy{
		ReplayEnergy: bench.ReplayEnergy{Source: energy.SourceRAPL, WholeS: 4, WholeJ: 40, BusyS: 1, BusyJ: 15},
		Label:        "rapl <package-0> & dram", WholeW: 10, BusyW: 15, JPerTx: 0.04, BusyJPerTx: 0.015,
		TxPerSecPerJ: 6.25, BusyTxPerSecPerJ: 16.5, MeterCPUShare: 0.001,
	}
	base := func() *bench.ValidatorResult {
		return &bench.ValidatorResult{Mode: "sequential", StateDB: "pebble", BlockSize: 100, Blocks: 10, Txs: 1000, Valid: 1000,
			Durable: true, Cores: 4, TPS: 500, CryptoBoundTPS: 2000, Ratio: 0.25, CPUSecondsPerTx: 150e-6, VerifyCPUSecondsPerTx: 90e-6,
			CPURatio: 1.67, BlocksPerFsync: 1.5, RSSPeakMiB: 80, Invariant: "holds", Rate: "max",
			Latency: map[string]bench.Percentiles{"total": {P50: 3.5, P99: 9.25}}}
	}
	a := base()
	a.Workers, a.Energy = 2, model
	b := base()
	b.Reparse, b.Rate, b.OfferedTPS, b.TPS, b.Energy = true, "50% of max (250 tx/s)", 250, 250, rapl
	return []*bench.ValidatorResult{a, b}
}

// TestValidatorCSV: one header row of snake_case names, and per run its
// configuration, figures, source and the model's parameters, one value
// a cell.
func TestValidatorCSV(t *testing.T) {
	rs := validatorResults()
	var b bytes.Buffer
	if err := WriteValidatorCSV(&b, rs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want a header and 2", len(rows))
	}
	for _, h := range rows[0] {
		if h != strings.ToLower(h) || strings.ContainsAny(h, " /%") {
			t.Errorf("column %q: want snake_case", h)
		}
	}
	col := func(row int, name string) string {
		for i, h := range rows[0] {
			if h == name {
				return rows[row][i]
			}
		}
		t.Fatalf("no column %q in %v", name, rows[0])
		return ""
	}
	num := func(row int, name string) float64 {
		v, err := strconv.ParseFloat(col(row, name), 64)
		if err != nil {
			t.Errorf("row %d %s: %v", row, name, err)
		}
		return v
	}
	for name, want := range map[string]string{
		"block_size_txs": "100", "mode": "sequential", "workers": "2", "reparse": "false", "rate": "max", "offered_tx_per_s": "",
		"state_db": "pebble", "energy_source": "model", "energy_label": "model (active 8.50 W/core, idle 1.25 W/core, 2 cores)",
		"model_active_w_per_core": "8.5", "model_idle_w_per_core": "1.25", "model_cores": "2",
	} {
		if got := col(1, name); got != want {
			t.Errorf("row 1 %s = %q, want %q", name, got, want)
		}
	}
	for name, want := range map[string]float64{
		"committed_tx_per_s": 500, "ratio_pct": 25, "cpu_us_per_tx": 150, "block_latency_p99_ms": 9.25, "busy_pct": 75,
		"whole_w": 10, "busy_w": 12, "whole_mj_per_tx": 20, "busy_mj_per_tx": 18, "whole_tx_per_s_per_j": 25.5,
		"busy_tx_per_s_per_j": 37.25, "validation_tx_per_s_per_j": 41.5, "meter_cpu_pct": 0.42,
	} {
		if got := num(1, name); got < want*(1-1e-9) || got > want*(1+1e-9) {
			t.Errorf("row 1 %s = %v, want %v", name, got, want)
		}
	}
	for name, want := range map[string]string{
		"workers": "4", "reparse": "true", "rate": "50% of max (250 tx/s)", "offered_tx_per_s": "250", "energy_source": "rapl",
		"energy_label": "rapl <package-0> & dram", "model_active_w_per_core": "", "model_cores": "", "busy_tx_per_s_per_j": "16.5",
	} {
		if got := col(2, name); got != want {
			t.Errorf("row 2 %s = %q, want %q", name, got, want)
		}
	}
}

// TestValidatorHTML: a well-formed page with the throughput table, the
// energy table with every row's source escaped, and the tx/s/J chart.
func TestValidatorHTML(t *testing.T) {
	rs := validatorResults()
	var b bytes.Buffer
	if err := WriteValidatorHTML(&b, "validator <test>", rs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	ids := wellFormed(t, out)
	if ids["tx-per-s-per-j"] != "svg" {
		t.Errorf("no tx/s/J chart")
	}
	i := strings.Index(out, `<table class="energy">`)
	if i < 0 {
		t.Fatalf("no energy table:\n%s", out)
	}
	energy := out[i:]
	for _, s := range []string{"<th>busy tx/s/J</th>", "<th>source</th>",
		"<td class=\"l\">model (active 8.50 W/core, idle 1.25 W/core, 2 cores)</td>",
		"<td class=\"l\">rapl &lt;package-0&gt; &amp; dram</td>", "<td>37</td>", "<td>50% of max (250 tx/s)</td>"} {
		if !strings.Contains(energy, s) && !strings.Contains(energy, strings.Replace(s, "<td>", `<td class="l">`, 1)) {
			t.Errorf("energy table lacks %s", s)
		}
	}
	for _, s := range []string{`<table class="validator">`, "<th>committed tx/s</th>", "<td>25.0%</td>", "Source model"} {
		if !strings.Contains(out, s) {
			t.Errorf("page lacks %s", s)
		}
	}
}

// TestValidatorTextSharesCells: the text tables show the same cells as
// the HTML, and an energy row's source.
func TestValidatorTextSharesCells(t *testing.T) {
	rs := validatorResults()
	var b bytes.Buffer
	WriteValidatorTable(&b, rs)
	WriteValidatorEnergyTable(&b, rs)
	for _, s := range []string{"committed tx/s", "25.0%", "busy tx/s/J", "model (active 8.50 W/core, idle 1.25 W/core, 2 cores)",
		"rapl <package-0> & dram", "Source model", "50% of max (250 tx/s)"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, b.String())
		}
	}
}
