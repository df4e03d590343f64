package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBenchRunAndCompare runs two short rounds of the real command on
// embedded networks, writes every output, and compares the JSON files.
func TestBenchRunAndCompare(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	html, csv := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.csv")
	out, err := cli(t, "bench", "run", "--workload", "ycsb", "--param", "mix=a,records=100,value_size=100",
		"--clients", "4", "--duration", "600ms", "--json", a, "--csv", csv, "--html", html)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"throughput tx/s", "VALID", "check ok: all 2 peers at height", "wrote " + html} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{a, csv, html} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if raw, err := os.ReadFile(a); err != nil || !strings.Contains(string(raw), `"go_version": "`+runtime.Version()) {
		t.Errorf("%s lacks the build (go_version %s): %v", a, runtime.Version(), err)
	}
	if out, err = cli(t, "bench", "--clients", "2", "--duration", "500ms", "--rate", "fixed-rate", "--tps", "40",
		"--batch-mode", "stream", "--json", b, "--html", ""); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "Smallbank invariant holds") {
		t.Errorf("plain `bench` output lacks the invariant:\n%s", out)
	}
	out, err = cli(t, "bench", "compare", a, b)
	if err != nil || !strings.Contains(out, "B/A") || !strings.Contains(out, "goodput tx/s") {
		t.Fatalf("compare: %v\n%s", err, out)
	}
}

func TestBenchRunBadInput(t *testing.T) {
	rounds := filepath.Join(t.TempDir(), "rounds.yaml")
	os.WriteFile(rounds, []byte("rounds:\n  - workload: ycsb\n    durration: 1s\n"), 0o644)
	for _, tc := range []struct {
		args   []string
		errHas string
	}{
		{[]string{"bench", "run", "--rounds", rounds}, `rounds.yaml: line 3: unknown field "durration", want one of label, workload`},
		{[]string{"bench", "run", "--preset", "nope"}, `unknown preset "nope": want one of channels, default,`},
		{[]string{"bench", "run", "--preset", "default", "--clients", "3"}, "--clients describe one round, which --rounds or --preset replaces"},
		{[]string{"bench", "run", "--workload", "tpcc"}, `workload = "tpcc": want one of empty`},
		{[]string{"bench", "run", "--param", "mix=q", "--workload", "ycsb"}, `parameter mix = "q"`},
		{[]string{"bench", "run", "--validation", "optimistic"}, `validation = "optimistic": want sequential or parallel`},
		{[]string{"bench", "run", "--preset", "default", "--validation", "parallel"}, "--validation describe one round"},
		{[]string{"bench", "compare", rounds, rounds}, "want a file `strand bench --json` wrote"},
	} {
		_, err := cli(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("strand %v = %v, want an error containing %q", tc.args, err, tc.errHas)
		}
	}
}
