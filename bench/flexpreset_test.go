//go:build linux

package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// smokeDuration is how long each round of the FlexChain presets' smoke
// test loads its network.
const smokeDuration = time.Second

// smokeRounds are the rounds of a preset's quick form the smoke test runs,
// each for smokeDuration: its first and its last, which in every FlexChain
// preset differ in what they start (tiered against monolithic peers, the
// smallest against the largest memory tier, cache or quota, one compute
// node against four with the other validation mode).
func smokeRounds(rs []Round) []Round {
	out := []Round{rs[0]}
	if len(rs) > 1 {
		out = append(out, rs[len(rs)-1])
	}
	for i := range out {
		out[i].Duration = smokeDuration
	}
	return out
}

// TestFlexchainPresetsSmoke runs the quick form of every FlexChain preset
// (flexchain-*) in CI: two of its rounds each, for a second, on real node
// processes (memory nodes, compute nodes, cgroup quotas as root). Each
// round commits and passes the harness's correctness check; a round with
// memory nodes reports its tiers, and one with compute nodes has every
// compute node answer proposals. TestPresetsValidate checks every round
// of every form; the measured forms are docs/flexchain.md's commands.
func TestFlexchainPresetsSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin, err := strandBinary()
	if err != nil {
		t.Fatal(err)
	}
	parent := ""
	if os.Geteuid() == 0 {
		parent = cgroupTestParent(t)
	}
	for _, name := range slices.Sorted(maps.Keys(Presets)) {
		if !strings.HasPrefix(name, "flexchain-") {
			continue
		}
		rs, err := PresetRounds(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range smokeRounds(rs) {
			if len(r.MemoryLimitMB) > 0 && parent == "" {
				t.Logf("%s: round %s runs without its memory limit: memory cgroups need root", name, r.Label)
				r.MemoryLimitMB = nil
			}
			if r.Interference.cgroups() {
				if parent == "" {
					t.Logf("%s: round %s skipped: its cgroups need root", name, r.Label)
					continue
				}
				r.CgroupParent = parent
			}
			res, err := Run(context.Background(), r, Target{Command: []string{bin}})
			if err != nil {
				t.Errorf("%s: round %s: %v", name, r.Label, err)
				continue
			}
			if res.Committed == 0 {
				t.Errorf("%s: round %s committed nothing (warnings %v)", name, r.Label, res.Warnings)
			}
			if r.Memnodes && res.Tiers == nil {
				t.Errorf("%s: round %s has memory nodes but no tier figures (warnings %v)", name, r.Label, res.Warnings)
			}
			if want := r.ComputeNodes * orgsOf(r); want > 0 && res.Tiers != nil && len(res.Tiers.Endorsed) != want {
				t.Errorf("%s: round %s: proposals answered per pool member %v, want each of its %d compute nodes", name, r.Label, res.Tiers.Endorsed, want)
			}
			if len(r.CPUQuota) > 0 && capped(res) == 0 {
				t.Errorf("%s: round %s has cpu_quota %v but no node reports one (%+v)", name, r.Label, r.CPUQuota, res.Isolation)
			}
			if lim := r.MemoryLimitMB["memnode"]; lim > 0 {
				if len(res.MemoryLimits) != orgsOf(r) {
					t.Errorf("%s: round %s: memory cgroup figures %+v (warnings %v), want one per memory node", name, r.Label, res.MemoryLimits, res.Warnings)
				}
				for _, m := range res.MemoryLimits {
					if m.PeakMB > float64(lim) || m.OOMKills != 0 || m.UsageMB == 0 {
						t.Errorf("%s: round %s: memory node %+v: want it charged, at most its %d MiB limit, none killed", name, r.Label, m, lim)
					}
				}
				if left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/memory/strand-bench-mem-%d", os.Getpid())); len(left) > 0 {
					t.Errorf("%s: round %s left its memory cgroup %v", name, r.Label, left)
				}
			}
			t.Logf("%s: round %s: %.0f tx/s", name, r.Label, res.ThroughputTPS)
		}
	}
}

// capped is how many of a round's nodes report a CPU quota and a share
// of throttled periods between 0 and 100%.
func capped(res *Result) int {
	n := 0
	if res.Isolation == nil {
		return 0
	}
	for _, s := range res.Isolation.Nodes {
		if s.QuotaCores > 0 && s.ThrottledPct >= 0 && s.ThrottledPct <= 100 {
			n++
		}
	}
	return n
}

// orgsOf is a round's orgs, its default filled in.
func orgsOf(r Round) int {
	r.embeddedDefaults()
	return r.Orgs
}
