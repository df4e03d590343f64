package bench

import (
	"maps"
	"path/filepath"
	"testing"
)

// TestFlexPairsFair: in every FlexChain preset form and rounds file, a
// monolithic round compared with a tiered one (the latest earlier round
// with memory nodes on the same workload, parameters and clients) gives
// its peers as many bytes of cache of their own as the tiered peers have
// (state_cache_mb = cache_mb) and the same CPU quota per peer, so that
// the pair differs only in where the state lives.
func TestFlexPairsFair(t *testing.T) {
	sets := map[string][]Round{}
	for _, name := range []string{"flexchain-tiered", "flexchain-tiered-full"} {
		rs, err := PresetRounds(name)
		if err != nil {
			t.Fatal(err)
		}
		sets[name] = rs
	}
	files, err := filepath.Glob("rounds/flexchain-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("rounds files: %v, %v", files, err)
	}
	for _, f := range files {
		rs, err := LoadRounds(f)
		if err != nil {
			t.Fatal(err)
		}
		sets[f] = rs
	}
	pairs := 0
	for name, rs := range sets {
		for i, m := range rs {
			if m.Memnodes {
				continue
			}
			t0 := tieredBefore(rs[:i], m)
			if t0 == nil {
				t.Errorf("%s: monolithic round %s has no tiered round before it to compare with", name, m.Label)
				continue
			}
			pairs++
			if m.StateCacheMB != t0.CacheMB || m.CPUQuota["peer"] != t0.CPUQuota["peer"] {
				t.Errorf("%s: %s has state_cache_mb %d and cpu_quota.peer %g, its tiered round %s cache_mb %d and cpu_quota.peer %g: want them equal",
					name, m.Label, m.StateCacheMB, m.CPUQuota["peer"], t0.Label, t0.CacheMB, t0.CPUQuota["peer"])
			}
		}
	}
	if pairs == 0 {
		t.Fatal("no monolithic round found")
	}
}

// tieredBefore is the latest round of rs with memory nodes on m's
// workload, parameters and clients, or nil.
func tieredBefore(rs []Round, m Round) *Round {
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		if r.Memnodes && r.Workload == m.Workload && r.Clients == m.Clients && maps.Equal(r.Params, m.Params) {
			return &rs[i]
		}
	}
	return nil
}
