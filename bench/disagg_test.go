package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestDisaggRefused: every bad combination of a round's memory nodes,
// caches, memtable and compute nodes is refused before anything starts,
// naming the field and what is allowed.
func TestDisaggRefused(t *testing.T) {
	procs := Interference{Network: "processes"}
	for _, tc := range []struct {
		d     Disagg
		in    Interference
		state string
		want  string
	}{
		{Disagg{Memnodes: true}, Interference{}, "", "memnodes = true: want network: processes"},
		{Disagg{MemoryMB: 64}, procs, "", "memory_mb = 64: want it only with memnodes: true"},
		{Disagg{Memnodes: true, MemoryMB: -3}, procs, "", "memory_mb = -3: want 1 to 1048576"},
		{Disagg{CacheMB: 8}, procs, "", "cache_mb = 8: want it only with memnodes: true"},
		{Disagg{Memnodes: true, CacheMB: -2}, procs, "", "cache_mb = -2: want -1 (no local cache) or 1 to 1048576"},
		{Disagg{Memnodes: true, MemtableMB: 4}, procs, "", "memtable_mb = 4: want it only without memnodes"},
		{Disagg{MemtableMB: 5000}, Interference{}, "", "memtable_mb = 5000: want 1 to 4095"},
		{Disagg{Memnodes: true, StateCacheMB: 6}, procs, "", "state_cache_mb = 6: want it only without memnodes"},
		{Disagg{StateCacheMB: -2}, procs, "", "state_cache_mb = -2: want -1 (none) or 1 to 65536"},
		{Disagg{MemtableMB: 4}, Interference{}, "bbolt", `memtable_mb = 4: want it only with state_db pebble (have "bbolt")`},
		{Disagg{}, Interference{Network: "processes", CPUQuota: map[string]float64{"memnode": 0.5}}, "", "cpu_quota.memnode = 0.5: want it only with memnodes: true"},
		{Disagg{ComputeNodes: 2}, procs, "", "compute_nodes = 2: want it only with memnodes: true"},
		{Disagg{Memnodes: true, ComputeNodes: 65}, procs, "", "compute_nodes = 65: want 0 to 64"},
		{Disagg{Memnodes: true, ComputeNodes: -1}, procs, "", "compute_nodes = -1: want 0 to 64"},
		{Disagg{Memnodes: true, ComputeNodes: 1, ComputeVerify: "both"}, procs, "", `compute_verify = "both": want compute (the default) or primary`},
		{Disagg{Memnodes: true, ComputeVerify: "primary"}, procs, "", `compute_verify = "primary": want it only with compute_nodes of 1 or more`},
		{Disagg{Memnodes: true}, Interference{Network: "processes", CPUQuota: map[string]float64{"compute": 0.4}}, "", "cpu_quota.compute = 0.4: want it only with compute_nodes of 1 or more"},
		{Disagg{Memnodes: true, ComputeNodes: 1}, Interference{Network: "processes", CPUQuota: map[string]float64{"compute": 0.001}}, "", "cpu_quota.compute is 0.001 cores, want 0 (no quota) or 0.01 to"},
		{Disagg{StorageCacheMB: 4}, procs, "", "storage_cache_mb = 4: want it only with memnodes: true"},
		{Disagg{Memnodes: true, StorageCacheMB: -1}, procs, "", "storage_cache_mb = -1: want 1 to 65536"},
		{Disagg{MemoryLimitMB: map[string]int{"memnode": 120}}, procs, "", "memory_limit_mb.memnode = 120: want it only with memnodes: true"},
		{Disagg{Memnodes: true, MemoryLimitMB: map[string]int{"peer": 120}}, procs, "", "memory_limit_mb.peer: want memnode"},
		{Disagg{Memnodes: true, MemoryLimitMB: map[string]int{"memnode": 16}}, procs, "", "memory_limit_mb.memnode = 16: want 32 to"},
		{Disagg{Memnodes: true, MemoryLimitMB: map[string]int{"memnode": 120}}, procs, "", "memory_limit_mb.memnode = 120: want at least 152 MiB with storage_cache_mb 128"},
		{Disagg{}, procs, "", `validation = "optimistic": want sequential or parallel`},
	} {
		r := Round{Label: "x", Disagg: tc.d, Interference: tc.in, StateDB: tc.state}
		if strings.HasPrefix(tc.want, "validation") {
			r.Validation = "optimistic"
		}
		r.EnsureDefaults()
		r.embeddedDefaults()
		err := r.Validate(true)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `round "x"`) {
			t.Errorf("Validate(%+v) = %v, want an error naming round \"x\" and saying %q", tc.d, err, tc.want)
		}
	}
	for _, ok := range []Round{
		{Label: "tiered", Disagg: Disagg{Memnodes: true, MemoryMB: 16, CacheMB: -1},
			Interference: Interference{Network: "processes", CPUQuota: map[string]float64{"memnode": 0.5}}},
		{Label: "mono", Disagg: Disagg{MemtableMB: 4}},
		{Label: "mono-procs", Disagg: Disagg{MemtableMB: 1024, StateCacheMB: 6}, Interference: procs},
		{Label: "mono-quota", Disagg: Disagg{StateCacheMB: -1}, Interference: Interference{Network: "processes", CPUQuota: map[string]float64{"peer": 0.4}}},
		{Label: "compute", Disagg: Disagg{Memnodes: true, ComputeNodes: 4}, Validation: "parallel",
			Interference: Interference{Network: "processes", CPUQuota: map[string]float64{"compute": 0.4, "memnode": 1}}},
	} {
		ok.EnsureDefaults()
		ok.embeddedDefaults()
		if err := ok.Validate(true); err != nil {
			t.Errorf("round %s: %v", ok.Label, err)
		}
	}
	r := Round{Label: "net", Disagg: Disagg{MemtableMB: 4}}
	r.EnsureDefaults()
	if err := r.Validate(false); err == nil || !strings.Contains(err.Error(), "want them unset with --net") {
		t.Errorf("a --net round with memtable_mb: %v, want a refusal", err)
	}
}

// TestDisaggFile: the fields load from a rounds file, strictly.
func TestDisaggFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.yaml")
	body := `rounds:
  - {label: mono, workload: ycsb, memtable_mb: 4, state_cache_mb: 7}
  - {label: tiered, workload: ycsb, network: processes, memnodes: true, memory_mb: 32, cache_mb: 8, cpu_quota: {memnode: 0.5}}
  - {label: compute, workload: kmeans, network: processes, memnodes: true, compute_nodes: 2, cpu_quota: {compute: 0.4}, validation: parallel}
`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := LoadRounds(p)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].MemtableMB != 4 || rs[0].StateCacheMB != 7 || !rs[1].Memnodes || rs[1].MemoryMB != 32 || rs[1].CacheMB != 8 || rs[1].CPUQuota["memnode"] != 0.5 {
		t.Fatalf("loaded %+v and %+v", rs[0].Disagg, rs[1].Disagg)
	}
	if c := rs[2]; c.ComputeNodes != 2 || c.CPUQuota["compute"] != 0.4 || c.Validation != "parallel" {
		t.Fatalf("loaded compute_nodes %d, cpu_quota %v, validation %q; want 2, compute 0.4, parallel", c.ComputeNodes, c.CPUQuota, c.Validation)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(body, "memory_mb", "memory_mib", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRounds(p); err == nil || !strings.Contains(err.Error(), `unknown field "memory_mib"`) {
		t.Fatalf("LoadRounds with memory_mib: %v", err)
	}
}

// TestDisaggSpec: the sizes reach the generated node files: the memory
// tier limit in every memory node's file, the local cache in every
// peer's, and the memtable in the monolithic peers' (orderers untouched);
// compute_nodes gives every peer its compute nodes, and validation sets
// the peers' pipeline mode.
func TestDisaggSpec(t *testing.T) {
	o := NetOptions{Validation: "parallel", Disagg: Disagg{Memnodes: true, MemoryMB: 48, CacheMB: 3, ComputeNodes: 2}}
	lay, err := localnet.Generate(filepath.Join(t.TempDir(), "tiered"), o.spec())
	if err != nil {
		t.Fatal(err)
	}
	if len(lay.Memnodes) != 2 {
		t.Fatalf("%d memory nodes, want one per peer (2)", len(lay.Memnodes))
	}
	for _, p := range []string{"peer0.Org1", "peer0.Org2"} {
		if cs := lay.ComputesOf(p); len(cs) != 2 {
			t.Errorf("peer %s has compute nodes %v, want 2", p, cs)
		}
	}
	for _, m := range lay.Memnodes {
		cfg, err := node.LoadMemnode(m.Config)
		if err != nil || cfg.MemoryMB != 48 {
			t.Errorf("memory node %s: memoryMB %v, %v; want 48", m.Name, cfg, err)
		}
	}
	mono := Disagg{MemtableMB: 4, StateCacheMB: 3}
	lay2, err := localnet.Generate(filepath.Join(t.TempDir(), "mono"), mono.spec(localnet.Spec{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*localnet.Layout{lay, lay2} {
		for _, n := range l.Nodes {
			cfg, err := node.LoadNode(n.Config)
			if err != nil {
				t.Fatal(err)
			}
			o := cfg.StateDB.Options()
			switch {
			case n.Kind() == "orderer" && (cfg.StateDB.Pebble.MemTableMB != 0 || cfg.StateDB.Memnode.CacheMB != 0):
				t.Errorf("orderer %s tuned: %+v", n.Name, cfg.StateDB)
			case n.Kind() == "peer" && l == lay && (cfg.StateDB.Backend != "memnode" || o.Memnode.CacheBytes != 3<<20 || cfg.Pipeline.StateCacheMB != -1 || cfg.Pipeline.Mode != "parallel"):
				t.Errorf("peer %s: backend %s, cache %d bytes, committer cache %d MiB, mode %s; want memnode, 3 MiB, -1 (off), parallel",
					n.Name, cfg.StateDB.Backend, o.Memnode.CacheBytes, cfg.Pipeline.StateCacheMB, cfg.Pipeline.Mode)
			case n.Kind() == "peer" && l == lay2 && (cfg.StateDB.Backend != "pebble" || o.Pebble.MemTableSize != 4<<20 || cfg.Pipeline.StateCacheMB != 3 || cfg.Pipeline.Mode != "sequential"):
				t.Errorf("peer %s: backend %s, memtable %d bytes, committer cache %d MiB, mode %s; want pebble, 4 MiB, 3 MiB, sequential",
					n.Name, cfg.StateDB.Backend, o.Pebble.MemTableSize, cfg.Pipeline.StateCacheMB, cfg.Pipeline.Mode)
			}
		}
	}
}
