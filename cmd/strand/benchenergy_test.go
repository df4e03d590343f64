package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
