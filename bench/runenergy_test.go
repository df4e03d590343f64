package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/energy"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestRoundEnergyModel: a round of 4 s, 1000 commits, a node at 150% of
// a core, another at 50% and the load generator at 100%, on 2 cores.
func TestRoundEnergyModel(t *testing.T) {
	m, err := openRoundMeter(energy.Config{Source: energy.SourceModel, Model: energy.ModelParams{ActiveWatts: 10, IdleWatts: 2, Cores: 2}})
	if err != nil {
		t.Fatal(err)
	}
	m.begin(nil)
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
	m.begin(nil)
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

// metricsServer serves a peer's metrics endpoint on 127.0.0.1 whose
// busy counter reads *busy seconds; body, if set, replaces the page.
func metricsServer(t *testing.T, busy *float64, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if body != "" {
			io.WriteString(w, body)
			return
		}
		fmt.Fprintf(w, "# HELP %s x\n# TYPE %s counter\n%s %g\n", seriesPipelineBusy, seriesPipelineBusy, seriesPipelineBusy, *busy)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestRoundEnergyBusy: a --net round of 10 s and 1000 commits on the
// model (8.5 W active, 1.44 W idle, 2 cores). peer0 ran 5 core-s of CPU
// and its committer was busy 4 s of the round (its counter 100 → 104);
// peer1 ran 2 core-s, busy 1.5 s. The busy figures charge each peer's
// CPU at active power and its idle core-time inside its busy periods at
// idle power; the orderer and the load generator have none.
func TestRoundEnergyBusy(t *testing.T) {
	b0, b1 := 100.0, 7.0
	a0, a1 := metricsServer(t, &b0, ""), metricsServer(t, &b1, "")
	n := &Network{Layout: &localnet.Layout{Nodes: []localnet.Node{
		{Name: "orderer0", Role: identity.RoleOrderer, Metrics: metricsServer(t, nil, "strand_orderer_height 3\n")},
		{Name: "peer0", Role: identity.RolePeer, Metrics: a0},
		{Name: "peer1", Role: identity.RolePeer, Metrics: a1},
	}}}
	m, err := openRoundMeter(energy.Config{Source: energy.SourceModel, Model: energy.ModelParams{ActiveWatts: 8.5, IdleWatts: 1.44, Cores: 2}})
	if err != nil {
		t.Fatal(err)
	}
	m.begin(n)
	b0, b1 = 104, 8.5
	res := &Result{ElapsedS: 10, Usage: Usage{Cores: 2, Procs: []ProcUsage{
		{Name: "orderer0", CPUPercent: 10}, {Name: "peer0", CPUPercent: 50}, {Name: "peer1", CPUPercent: 20}, {Name: loadGenerator, CPUPercent: 30}}}}
	res.Committed = 1000
	e, err := m.end(res)
	if err != nil {
		t.Fatal(err)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9*max(1, math.Abs(want)) }
	// peer0: 8.5 × 5 + 1.44 × (2 × 4 − 5) = 46.82 J over 4 s.
	// peer1: 8.5 × 2 + 1.44 × (2 × 1.5 − 2) = 18.44 J over 1.5 s.
	want := map[string][2]float64{"peer0": {4, 46.82}, "peer1": {1.5, 18.44}}
	for _, p := range e.Procs {
		w, ok := want[p.Name]
		if !ok {
			if p.BusyS != 0 || p.BusyJoules != 0 || p.BusyTxPerSecPerJ != 0 {
				t.Errorf("%s is no peer but has busy figures %+v", p.Name, p)
			}
			continue
		}
		if !near(p.BusyS, w[0]) || !near(p.BusyJoules, w[1]) || !near(p.BusyWatts, w[1]/w[0]) ||
			!near(p.BusyJPerTx, w[1]/1000) || !near(p.BusyTxPerSecPerJ, 1000/w[1]) {
			t.Errorf("%s busy %+v, want %v s, %v J, %v W, %v tx/s/J", p.Name, p, w[0], w[1], w[1]/w[0], 1000/w[1])
		}
		if p.BusyTxPerSecPerJ <= p.TxPerSecPerJ {
			t.Errorf("%s: busy %v tx/s/J not above whole %v: idle time was not excluded", p.Name, p.BusyTxPerSecPerJ, p.TxPerSecPerJ)
		}
	}
	// Per peer: (46.82 + 18.44) / 2 = 32.63 J over 2.75 s.
	pb := e.PeersBusy
	if pb == nil || !near(pb.BusyJoules, 32.63) || !near(pb.BusyS, 2.75) || !near(pb.BusyWatts, 65.26/5.5) || !near(pb.BusyTxPerSecPerJ, 1000/32.63) {
		t.Errorf("peers' busy %+v, want 32.63 J, 2.75 s, %v W, %v tx/s/J", pb, 65.26/5.5, 1000/32.63)
	}
	if e.BusySource != PeerBusySource || e.BusyNote != "" {
		t.Errorf("busy source %q note %q", e.BusySource, e.BusyNote)
	}

	// A peer without the counter: no busy figures, and the note names it.
	n.Layout.Nodes[2].Metrics = metricsServer(t, nil, "strand_committer_height 9\n")
	m.begin(n)
	e, err = m.end(res)
	if err != nil {
		t.Fatal(err)
	}
	if e.PeersBusy != nil || !strings.Contains(e.BusyNote, seriesPipelineBusy) {
		t.Errorf("peer without the counter: busy %+v, note %q; want none and a note naming the counter", e.PeersBusy, e.BusyNote)
	}
	// An embedded network: none, and the note says why.
	m.begin(&Network{Orderer: &node.Orderer{}})
	if e, err = m.end(res); err != nil || e.PeersBusy != nil || !strings.Contains(e.BusyNote, "embedded") {
		t.Errorf("embedded: %v, busy %+v, note %q", err, e.PeersBusy, e.BusyNote)
	}
}
