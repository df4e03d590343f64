package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestInterferenceRefused: every bad field of a round's interference is
// refused before anything starts, naming the field and what is allowed.
func TestInterferenceRefused(t *testing.T) {
	procs := func(i Interference) Interference { i.Network = "processes"; return i }
	for _, tc := range []struct {
		in   Interference
		want string
	}{
		{Interference{Network: "docker"}, `network = "docker": want embedded or processes`},
		{procs(Interference{Hogs: -1}), "hogs = -1: want 0 to 256"},
		{procs(Interference{Hogs: 1000}), "hogs = 1000: want 0 to 256"},
		{Interference{Hogs: 2}, "hogs, isolation and cpu_quota need network: processes"},
		{procs(Interference{HogsStop: time.Second}), "hogs_stop = 1s: want it only with hogs"},
		{procs(Interference{HogsIdle: true}), "hogs_idle: want it only with hogs"},
		{procs(Interference{Hogs: 2, HogsStop: time.Minute}), "hogs_stop = 1m0s: want 0 (at the end) or more than 0 and less than the duration, 10s"},
		{procs(Interference{CPUQuota: map[string]float64{"client": 1}}), "cpu_quota.client: want a node role, one of orderer, peer"},
		{procs(Interference{CPUQuota: map[string]float64{"peer": -0.5}}), "cpu_quota.peer is -0.5 cores, want 0 (no quota) or 0.01 to 1024"},
		{procs(Interference{CPUQuota: map[string]float64{"peer": 0.001}}), "cpu_quota.peer is 0.001 cores"},
		{procs(Interference{Hogs: 1, CgroupParent: "sys/fs/cgroup"}), `cgroup_parent = "sys/fs/cgroup": want an absolute, clean path`},
		{procs(Interference{Hogs: 1, CgroupParent: "/sys/fs/cgroup/cpu/../cpu"}), "want an absolute, clean path"},
		{procs(Interference{CgroupParent: "/sys/fs/cgroup/cpu"}), "want it only with hogs, isolation or cpu_quota"},
		{procs(Interference{Isolation: &IsolationConfig{K: 200}}), "isolation (k, delay_target, threshold, latency_target): isolation: bad configuration: Config.Components[0].K (node) is 200, want in [0, 100]"},
		{procs(Interference{Isolation: &IsolationConfig{K: 4, Threshold: -5}}), "Config.Threshold is -5 tps"},
		{procs(Interference{Isolation: &IsolationConfig{K: 4, DelayTarget: -time.Millisecond}}), "Config.DelayTarget is -1ms"},
		{procs(Interference{Isolation: &IsolationConfig{K: 4, Threshold: 5, ThresholdOf: "a"}}), `threshold = 5 and threshold_of = "a": want one`},
		{procs(Interference{Isolation: &IsolationConfig{K: 4, Period: -time.Second}}), "isolation.period = -1s"},
		{procs(Interference{Isolation: &IsolationConfig{K: 4, DelayTarget: time.Millisecond, Probe: time.Second}}), "isolation.probe = 1s: want 0 (no probes) or more than 0 and less than the period, 1s"},
		{procs(Interference{Isolation: &IsolationConfig{K: 4, DelayTarget: time.Millisecond, Period: 100 * time.Millisecond, Probe: 200 * time.Millisecond}}), "isolation.probe = 200ms: want 0 (no probes) or more than 0 and less than the period, 100ms"},
		{procs(Interference{Isolation: &IsolationConfig{K: 4, Probe: 100 * time.Millisecond}}), "isolation.probe = 100ms: want it only with a delay_target"},
	} {
		r := Round{Label: "x", Interference: tc.in}
		r.EnsureDefaults()
		r.embeddedDefaults()
		err := r.Validate(true)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `round "x"`) {
			t.Errorf("Validate(%+v) = %v, want an error naming round \"x\" and saying %q", tc.in, err, tc.want)
		}
	}
	r := Round{Label: "net", Interference: Interference{Network: "processes", Hogs: 2}}
	r.EnsureDefaults()
	if err := r.Validate(false); err == nil || !strings.Contains(err.Error(), "want them unset with --net") {
		t.Errorf("a --net round with hogs: %v, want a refusal", err)
	}
	r = Round{Label: "db", StateDB: "pebble", Interference: Interference{Network: "processes"}}
	r.EnsureDefaults()
	r.embeddedDefaults()
	if err := r.Validate(true); err == nil || !strings.Contains(err.Error(), "state_db") {
		t.Errorf("a process network with a state_db: %v, want a refusal naming state_db", err)
	}
}

// TestInterferenceFile: the fields load from a rounds file, and
// threshold_of must name an earlier round.
func TestInterferenceFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.yaml")
	body := `rounds:
  - {label: alone, workload: smallbank, network: processes, isolation: {k: 0}}
  - label: with
    workload: smallbank
    network: processes
    hogs: 8
    hogs_stop: 5s
    hogs_idle: true
    cpu_quota: {peer: 0.5, orderer: 0.25}
    isolation: {k: 4, delay_target: 200us, threshold_of: alone, period: 500ms, probe: 100ms, slow_fall: true}
`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := LoadRounds(p)
	if err != nil {
		t.Fatal(err)
	}
	w := rs[1]
	if w.Hogs != 8 || w.HogsStop != 5*time.Second || !w.HogsIdle || w.CPUQuota["peer"] != 0.5 || w.Isolation == nil ||
		w.Isolation.K != 4 || !w.Isolation.SlowFall || w.Isolation.Probe != 100*time.Millisecond || w.Isolation.DelayTarget != 200*time.Microsecond || w.Isolation.ThresholdOf != "alone" {
		t.Fatalf("loaded %+v", w.Interference)
	}
	got, err := Resolve(w, []*Result{{Label: "alone", ThroughputTPS: 1000}})
	if err != nil || got.Isolation.Threshold != 900 || got.Isolation.ThresholdOf != "" || w.Isolation.ThresholdOf != "alone" {
		t.Fatalf("Resolve: %+v, %v; want threshold 900 (0.9 of alone's 1000 tx/s), the round's own config untouched", got.Isolation, err)
	}
	if _, err := Resolve(w, []*Result{{Label: "alone"}}); err == nil || !strings.Contains(err.Error(), "committed nothing") {
		t.Fatalf("Resolve against a round that committed nothing: %v", err)
	}
	bad := strings.Replace(body, "threshold_of: alone", "threshold_of: later", 1)
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRounds(p); err == nil || !strings.Contains(err.Error(), `isolation.threshold_of = "later": want the label of an earlier round`) {
		t.Fatalf("LoadRounds with a dangling threshold_of: %v", err)
	}
	bad = strings.Replace(body, "hogs: 8", "hogz: 8", 1)
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRounds(p); err == nil || !strings.Contains(err.Error(), `unknown field "hogz"`) {
		t.Fatalf("LoadRounds with hogz: %v", err)
	}
}
