package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/bench"
	"github.com/strand-ledger/strand/energy"
)

// TestBenchValidatorEnergy: workers, reparse and paced replays each give
// a row whose energy is labelled with its source and the model's
// parameters, with the busy figure inside the whole one.
func TestBenchValidatorEnergy(t *testing.T) {
	jsonFile := filepath.Join(t.TempDir(), "out.json")
	var out bytes.Buffer
	cmd := rootCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"bench", "validator", "--blocks", "4", "--block-size", "5", "--accounts", "100", "--mode", "sequential",
		"--crypto-time", "50ms", "--workers", "1", "--reparse", "both", "--rate", "50%", "--energy-source", "model",
		"--idle-watts", "1", "--json", jsonFile})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"busy tx/s/J", "model (active 8.50 W/core, idle 1.00 W/core, 1 cores)", "Source model", "50% of max"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
	raw, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Workers int    `json:"workers"`
		Reparse bool   `json:"reparse"`
		Rate    string `json:"rate"`
		Energy  *struct {
			Source string `json:"source"`
			Label  string `json:"label"`
			Model  *struct {
				ActiveWatts float64 `json:"active_watts"`
				IdleWatts   float64 `json:"idle_watts"`
				Cores       int     `json:"cores"`
			} `json:"model"`
			WholeS           float64 `json:"whole_s"`
			WholeJ           float64 `json:"whole_j"`
			BusyS            float64 `json:"busy_s"`
			BusyJ            float64 `json:"busy_j"`
			TxPerSecPerJ     float64 `json:"tx_per_s_per_j"`
			BusyTxPerSecPerJ float64 `json:"busy_tx_per_s_per_j"`
			ValidationS      float64 `json:"validation_s"`
			ValidationJ      float64 `json:"validation_j"`
		} `json:"energy"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 { // reparse off and on, each at full speed and at 50%
		t.Fatalf("%d rows, want 4", len(rows))
	}
	reparsed := 0
	for i, r := range rows {
		e := r.Energy
		if e == nil || e.Source != "model" || e.Model == nil || e.Model.Cores != 1 || e.Model.IdleWatts != 1 || e.Model.ActiveWatts != 8.5 {
			t.Fatalf("row %d: energy %+v, want the model with 1 core (the peer's workers) and the flags' idle power", i, e)
		}
		if !(e.BusyS > 0 && e.BusyS <= e.WholeS && e.BusyJ > 0 && e.BusyJ <= e.WholeJ && e.TxPerSecPerJ > 0 && e.BusyTxPerSecPerJ >= e.TxPerSecPerJ) {
			t.Errorf("row %d: %+v: want 0 < busy ≤ whole in time and energy, hence busy tx/s/J ≥ whole", i, *e)
		}
		if !(e.ValidationS > 0 && e.ValidationS < e.BusyS && e.ValidationJ > 0 && e.ValidationJ < e.BusyJ) {
			t.Errorf("row %d: %+v: want the study's busy time (verify and validate) inside the busy periods, the persists left out", i, *e)
		}
		if r.Workers != 1 {
			t.Errorf("row %d: workers %d, want 1", i, r.Workers)
		}
		if r.Reparse {
			reparsed++
		}
		if want := i%2 == 0; want != (r.Rate == "max") {
			t.Errorf("row %d: rate %q, want max first, then 50%%", i, r.Rate)
		}
	}
	if reparsed != 2 {
		t.Errorf("%d reparse rows, want 2", reparsed)
	}
}

func TestBenchValidatorEnergyBadFlags(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "model.yaml")
	if err := os.WriteFile(bad, []byte("active_watts: 2\nidle_watts: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--active-watts", "-1"}, "--active-watts"},
		{[]string{"--idle-watts", "9"}, "idle_watts"},
		{[]string{"--energy-model", bad}, "idle_watts"},
		{[]string{"--energy-source", "solar"}, "solar"},
		{[]string{"--reparse", "maybe"}, "--reparse"},
		{[]string{"--rate", "0%"}, "--rate"},
		{[]string{"--rate", "50%", "--repeat", "0"}, "--repeat"},
		{[]string{"--repeat", "2"}, "--rate list"},
		{[]string{"--workers", "0"}, "--workers"},
		{[]string{"--preset", "fig9"}, "--preset"},
		{[]string{"--energy-every", "1us"}, "--energy-every"},
	} {
		cmd := rootCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetArgs(append([]string{"bench", "validator"}, tc.args...))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestChooseSource: the benchmarks' default source is RAPL where it can be
// read, the model where there is none, and the model with a warning
// where RAPL exists but cannot be read; a source asked for is kept.
func TestChooseSource(t *testing.T) {
	root := t.TempDir()
	zone := filepath.Join(root, "intel-rapl:0")
	os.MkdirAll(zone, 0o755)
	os.WriteFile(filepath.Join(zone, "name"), []byte("package-0\n"), 0o644)
	os.WriteFile(filepath.Join(zone, "max_energy_range_uj"), []byte("262143328850\n"), 0o644)
	for _, tc := range []struct {
		name, root, asked, want string
		warns                   bool
	}{
		{"unreadable", root, "", "model", true}, // no energy_uj: as when it is root-only
		{"none", filepath.Join(root, "none"), "", "model", false},
		{"asked", root, "model", "model", false},
	} {
		c := energy.Config{Source: energy.Source(tc.asked), PowercapRoot: tc.root}
		var warn bytes.Buffer
		chooseSource(&c, &warn)
		if string(c.Source) != tc.want || (warn.Len() > 0) != tc.warns {
			t.Errorf("%s: source %q, warning %q; want %q, warning %v", tc.name, c.Source, warn.String(), tc.want, tc.warns)
		}
	}
	os.WriteFile(filepath.Join(zone, "energy_uj"), []byte("5\n"), 0o644)
	c := energy.Config{PowercapRoot: root}
	chooseSource(&c, &bytes.Buffer{})
	if c.Source != energy.SourceRAPL {
		t.Errorf("readable RAPL: source %q, want rapl", c.Source)
	}
}

func TestPresetRefusesItsFlags(t *testing.T) {
	cmd := rootCmd()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetArgs([]string{"bench", "validator", "--preset", "idle-quick", "--rate", "50%"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--rate") || !strings.Contains(err.Error(), "idle-quick") {
		t.Errorf("preset with --rate: %v, want an error naming both", err)
	}
}

// TestBenchValidatorCSVHTML: --csv and --html write a row per run, each
// with its energy source and the model's parameters, and the JSON
// agrees with the CSV.
func TestBenchValidatorCSVHTML(t *testing.T) {
	dir := t.TempDir()
	csvFile, htmlFile, jsonFile := filepath.Join(dir, "out.csv"), filepath.Join(dir, "out.html"), filepath.Join(dir, "out.json")
	var out bytes.Buffer
	cmd := rootCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"bench", "validator", "--blocks", "3", "--block-size", "5", "--accounts", "100", "--mode", "sequential",
		"--crypto-time", "50ms", "--workers", "1", "--rate", "50%", "--energy-source", "model", "--idle-watts", "1",
		"--csv", csvFile, "--html", htmlFile, "--json", jsonFile})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{csvFile, htmlFile, jsonFile} {
		if !strings.Contains(out.String(), "wrote "+f) {
			t.Errorf("output does not say it wrote %s:\n%s", f, out.String())
		}
	}
	const label = "model (active 8.50 W/core, idle 1.00 W/core, 1 cores)"
	f, err := os.Open(csvFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 { // the header, full speed, 50%
		t.Fatalf("%d CSV rows, want 3: %v", len(rows), rows)
	}
	raw, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var js []struct {
		TPS    float64 `json:"tps"`
		Rate   string  `json:"rate"`
		Energy struct {
			BusyTxPerSecPerJ float64 `json:"busy_tx_per_s_per_j"`
		} `json:"energy"`
	}
	if err := json.Unmarshal(raw, &js); err != nil || len(js) != 2 {
		t.Fatalf("JSON: %v, %d runs", err, len(js))
	}
	for i, row := range rows[1:] {
		col := map[string]string{}
		for j, h := range rows[0] {
			col[h] = row[j]
		}
		want := map[string]string{"block_size_txs": "5", "mode": "sequential", "workers": "1", "reparse": "false", "rate": js[i].Rate,
			"state_db": "pebble", "energy_source": "model", "energy_label": label,
			"model_active_w_per_core": "8.5", "model_idle_w_per_core": "1", "model_cores": "1"}
		for k, v := range want {
			if col[k] != v {
				t.Errorf("CSV row %d %s = %q, want %q", i, k, col[k], v)
			}
		}
		for k, v := range map[string]float64{"committed_tx_per_s": js[i].TPS, "busy_tx_per_s_per_j": js[i].Energy.BusyTxPerSecPerJ} {
			got, err := strconv.ParseFloat(col[k], 64)
			if err != nil || got != v || v <= 0 {
				t.Errorf("CSV row %d %s = %q, want %v (the JSON's, above 0)", i, k, col[k], v)
			}
		}
	}
	page, err := os.ReadFile(htmlFile)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	i := strings.Index(html, `<table class="energy">`)
	if i < 0 {
		t.Fatalf("HTML has no energy table")
	}
	if n := strings.Count(html[i:], `<td class="l">`+label+`</td>`); n != 2 {
		t.Errorf("HTML energy table: %d rows labelled %q, want 2", n, label)
	}
	if !strings.Contains(html, `id="tx-per-s-per-j"`) || !strings.Contains(html, "50% of max") {
		t.Errorf("HTML lacks the tx/s/J chart or the paced run")
	}
}

// TestIdlePresetRounds: the idle preset replays its rates in four
// interleaved rounds (an even number, so a steady drift of the machine
// weighs on every rate alike); its quick form, a CI smoke, in one.
func TestIdlePresetRounds(t *testing.T) {
	for _, tc := range []struct {
		preset string
		rounds int
	}{{"idle", 4}, {"idle-quick", 1}, {"fig7a", 1}} {
		f := validatorFlags{energy: energyFlags{source: "model", every: bench.DefaultEnergyEvery}}
		if err := applyPreset(tc.preset, &f); err != nil {
			t.Fatal(err)
		}
		if f.repeat != tc.rounds {
			t.Errorf("%s: %d rounds, want %d", tc.preset, f.repeat, tc.rounds)
		}
		if tc.rounds > 1 {
			v, err := f.variants()
			if err != nil {
				t.Fatal(err)
			}
			if len(v.rates) != 3*tc.rounds {
				t.Errorf("%s: %d paced replays, want %d", tc.preset, len(v.rates), 3*tc.rounds)
			}
		}
	}
}
