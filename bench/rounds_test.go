package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/bench/rate"
	"github.com/strand-ledger/strand/bench/workload"
)

func TestLoadRounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", `rounds:
  - label: a
    workload: ycsb
    params: {mix: a, records: 500}
    rate: {kind: fixed-rate, tps: 200}
    clients: 8
    duration: 2s
    batch_mode: stream
`)
	rs, err := LoadRounds(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Params["records"] != "500" || rs[0].Rate.TPS != 200 || rs[0].Duration != 2*time.Second || rs[0].BatchMode != "stream" {
		t.Fatalf("rounds %+v", rs)
	}
	for _, tc := range []struct{ body, errHas string }{
		{"rounds:\n  - workload: ycsb\n    clents: 3\n", `bad.yaml: line 3: unknown field "clents", want one of label, workload, params, rate, clients, duration, seed`},
		{"rounds:\n  - workload: ycsb\n    rate: {kind: fixed-rate, tsp: 3}\n", `line 3: unknown field "tsp", want one of kind, tps, load`},
		{"rounds:\n  - workload: ycsb\n    duration: soon\n", "want a duration with a unit"},
		{"rounds:\n  - label: x\n", `round 1 ("x") has no workload`},
		{"rounds: []\n", "no rounds"},
	} {
		_, err := LoadRounds(write("bad.yaml", tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("LoadRounds(%q) = %v, want an error containing %q", tc.body, err, tc.errHas)
		}
	}
}

func TestPresetsValidate(t *testing.T) {
	for name := range Presets {
		for _, form := range []string{name, name + "-full"} {
			rs, err := PresetRounds(form)
			if err != nil || len(rs) == 0 {
				t.Fatalf("%s: %v", form, err)
			}
			if err := checkOf(rs); err != nil {
				t.Errorf("%s: %v", form, err)
			}
			labels := map[string]bool{}
			for _, r := range rs {
				if labels[r.Label] {
					t.Errorf("%s: two rounds labelled %q", form, r.Label)
				}
				labels[r.Label] = true
			}
			for _, r := range rs {
				r.EnsureDefaults()
				r.embeddedDefaults()
				if err := r.Validate(true); err != nil {
					t.Errorf("%s: %v", form, err)
				}
				if _, err := workload.New(r.Workload, r.Params, workload.Env{Clients: r.Clients, Seed: 1}); err != nil {
					t.Errorf("%s: %v", form, err)
				}
			}
		}
	}
	if _, err := PresetRounds("fabric"); err == nil || !strings.Contains(err.Error(), "want one of channels, default, external, flexchain-cache") {
		t.Errorf("unknown preset: %v", err)
	}
}

// A fixed rate given as a fraction of an earlier round's throughput takes
// that round's knee if it had one, its throughput otherwise; a label that
// names no earlier round, or a misplaced fraction, is an error naming it.
func TestResolveRelativeRate(t *testing.T) {
	done := []*Result{
		{Label: "max", ThroughputTPS: 800, Knee: &rate.StepResult{Rate: 1200, Throughput: 1000}},
		{Label: "plain", ThroughputTPS: 500},
	}
	r := Round{Label: "at90", Rate: rate.Config{Kind: "fixed-rate", Of: "max", Fraction: 0.9}}
	got, err := Resolve(r, done)
	if err != nil || got.Rate.TPS != 900 {
		t.Errorf("of a maximum-rate round: tps %g, %v; want 900 (90%% of its knee)", got.Rate.TPS, err)
	}
	r.Rate.Of = "plain"
	if got, err = Resolve(r, done); err != nil || got.Rate.TPS != 450 {
		t.Errorf("of a plain round: tps %g, %v; want 450", got.Rate.TPS, err)
	}
	r.Rate.Of = "later"
	if _, err := Resolve(r, done); err == nil || !strings.Contains(err.Error(), `rate.of "later": no earlier round`) {
		t.Errorf("unknown label: %v", err)
	}
	if err := checkOf([]Round{{Label: "a", Rate: rate.Config{Of: "b"}}, {Label: "b"}}); err == nil || !strings.Contains(err.Error(), `round 1 ("a"): rate.of = "b"`) {
		t.Errorf("of a later round: %v", err)
	}
	for _, c := range []struct {
		rc   rate.Config
		want string
	}{
		{rate.Config{Kind: "fixed-load", Load: 1, Of: "max", Fraction: 0.9}, "rate.of"},
		{rate.Config{Kind: "fixed-rate", Of: "max", Fraction: 0}, "rate.fraction"},
		{rate.Config{Kind: "fixed-rate", TPS: 10, Fraction: 0.5}, "only with rate.of"},
	} {
		r := Round{Label: "x", Rate: c.rc}
		r.EnsureDefaults()
		r.embeddedDefaults()
		if err := r.Validate(true); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.rc, err, c.want)
		}
	}
}
