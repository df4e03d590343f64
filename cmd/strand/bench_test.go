package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets this test binary stand in for the strand binary when the
// validator benchmark starts its peer process (os.Executable is the test
// binary here).
func TestMain(m *testing.M) {
	if os.Getenv("STRAND_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Setenv("STRAND_TEST_MAIN", "1") // for children only: this process is past the check
	os.Exit(m.Run())
}

// TestBenchValidator runs the README's main job on a tiny chain through
// the real command and checks the table and the JSON fields.
func TestBenchValidator(t *testing.T) {
	jsonFile := filepath.Join(t.TempDir(), "out.json")
	profiles := filepath.Join(t.TempDir(), "profiles")
	traces := filepath.Join(t.TempDir(), "traces")
	var out bytes.Buffer
	cmd := rootCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"bench", "validator", "--blocks", "4", "--block-size", "5,1", "--accounts", "100",
		"--crypto-time", "50ms", "--json", jsonFile, "--replay-cpuprofile", profiles, "--replay-trace", traces})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Smallbank invariant holds") {
		t.Errorf("output lacks the invariant check:\n%s", out.String())
	}
	raw, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 { // 2 block sizes × 2 modes
		t.Fatalf("%d result rows, want 4", len(rows))
	}
	for _, r := range rows {
		for _, field := range []string{"tps", "crypto_bound_tps", "stock_bound_tps", "ratio", "cpu_seconds_per_tx", "block_size", "mode", "state_db"} {
			if _, ok := r[field]; !ok {
				t.Errorf("JSON row lacks %q: %v", field, r)
			}
		}
		if r["tps"].(float64) <= 0 || r["valid"].(float64) != r["txs"].(float64) || r["separate_process"] != true {
			t.Errorf("implausible row: %v", r)
		}
		// Where the peer process's CPU went: the row's CPU and its user
		// and system time are one getrusage reading's differences, so they
		// agree (to the JSON's rounding), whatever else the machine runs.
		rt, _ := r["runtime"].(map[string]any)
		user, _ := rt["user_s"].(float64)
		sys, _ := rt["sys_s"].(float64)
		if cpu := r["cpu_seconds_per_tx"].(float64) * r["txs"].(float64); math.Abs(user+sys-cpu) > 1e-6 {
			t.Errorf("runtime %v: user+sys %v s, want the replay's CPU %v s", rt, user+sys, cpu)
		}
	}
	// One profile per replay: four runs of one replay each.
	for run := range 4 {
		if fi, err := os.Stat(filepath.Join(profiles, fmt.Sprintf("run%d-0.pprof", run))); err != nil || fi.Size() == 0 {
			t.Errorf("replay profile of run %d: %v", run, err)
		}
		if fi, err := os.Stat(filepath.Join(traces, fmt.Sprintf("run%d-0.trace", run))); err != nil || fi.Size() == 0 {
			t.Errorf("replay trace of run %d: %v", run, err)
		}
	}
}

func TestBenchValidatorBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--mode", "fast"}, {"--block-size", "0"}, {"--state-db", "couch"}, {"--alg", "rsa"},
	} {
		cmd := rootCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetArgs(append([]string{"bench", "validator"}, args...))
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: error %v, want one naming the flag", args, err)
		}
	}
}
