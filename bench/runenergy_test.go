package bench

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/energy"
)

// TestRoundEnergyModel: a round of 4 s, 1000 commits, a node at 150% of
// a core, another at 50% and the load generator at 100%, on 2 cores.
func TestRoundEnergyModel(t *testing.T) {
	m, err := openRoundMeter(energy.Config{Source: energy.SourceModel, Model: energy.ModelParams{ActiveWatts: 10, IdleWatts: 2, Cores: 2}})
	if err != nil {
		t.Fatal(err)
	}
	m.begin()
	res := &Result{ElapsedS: 4, Usage: Usage{Cores: 2, Procs: []ProcUsage{
		{Name: "peer0", CPUPercent: 150}, {Name: "orderer0", CPUPercent: 50}, {Name: loadGenerator, CPUPercent: 100}}}}
	res.Committed = 1000
	e, err := m.end(res)
	if err != nil {
		t.Fatal(err)
	}
	// peer0: 6 core-s busy, 8 − 6 = 2 idle: 60 + 4 = 64 J.
	// orderer0: 2 busy, 6 idle: 20 + 12 = 32 J. Load generator: 4 busy, 4 idle: 48 J.
	// Network: 8 busy of 8 core-s (the load generator left out): 80 J.
	want := map[string]float64{"peer0": 64, "orderer0": 32, loadGenerator: 48}
	for _, p := range e.Procs {
		if math.Abs(p.Joules-want[p.Name]) > 1e-9 {
			t.Errorf("%s: %v J, want %v", p.Name, p.Joules, want[p.Name])
		}
	}
	if math.Abs(e.Total.Joules-80) > 1e-9 || math.Abs(e.Total.Watts-20) > 1e-9 || math.Abs(e.Total.TxPerSecPerJ-12.5) > 1e-9 || math.Abs(e.Total.JPerTx-0.08) > 1e-12 {
		t.Errorf("total %+v, want 80 J, 20 W, 12.5 tx/s/J, 0.08 J/tx", e.Total)
	}
	if e.Source != energy.SourceModel || !strings.Contains(e.Label, "active 10.00 W/core, idle 2.00 W/core") {
		t.Errorf("source %q label %q", e.Source, e.Label)
	}
	res.Usage.Procs[1].Err = "no such process"
	if _, err := m.end(res); err == nil || !strings.Contains(err.Error(), "orderer0") {
		t.Errorf("unreadable process: %v, want an error naming it", err)
	}
}

// TestRoundEnergyRAPL: over a powercap tree the round is the socket's
// energy between begin and end, total only.
func TestRoundEnergyRAPL(t *testing.T) {
	root := t.TempDir()
	zone := filepath.Join(root, "intel-rapl:0")
	os.MkdirAll(zone, 0o755)
	put := func(f, v string) {
		if err := os.WriteFile(filepath.Join(zone, f), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("name", "package-0")
	put("max_energy_range_uj", "262143328850")
	put("energy_uj", "1000000")
	m, err := openRoundMeter(energy.Config{PowercapRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	m.begin()
	put("energy_uj", strconv.Itoa(1000000+40000000)) // 40 J
	res := &Result{ElapsedS: 2}
	res.Committed = 400
	e, err := m.end(res)
	if err != nil {
		t.Fatal(err)
	}
	if e.Source != energy.SourceRAPL || len(e.Procs) != 0 || math.Abs(e.Total.Joules-40) > 1e-9 || math.Abs(e.Total.TxPerSecPerJ-10) > 1e-9 {
		t.Errorf("RAPL round %+v, want 40 J, 10 tx/s/J, no per-process rows", e)
	}
	if _, err := openRoundMeter(energy.Config{Source: energy.SourceRAPL, PowercapRoot: filepath.Join(root, "none")}); !errors.Is(err, energy.ErrNoRAPL) {
		t.Errorf("rapl asked for where there is none: %v, want ErrNoRAPL", err)
	}
	if m, err := openRoundMeter(energy.Config{PowercapRoot: filepath.Join(root, "none")}); err != nil || m.rapl != nil {
		t.Errorf("no RAPL, no source asked: %v, %v; want the model", m, err)
	}
}
