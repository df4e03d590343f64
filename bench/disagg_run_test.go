//go:build linux

package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMemnodeRound runs a real YCSB round on node processes whose peers
// keep their state on memory nodes of their own, with a memory tier of
// 1 MiB (smaller than the records) and a local cache of 1 MiB: the round
// commits, every read is counted in one tier, remote reads have a
// latency, the memory nodes are measured like the other nodes, and the
// memory nodes' CPU quota is in the kernel during the round (as root).
func TestMemnodeRound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin, err := strandBinary()
	if err != nil {
		t.Fatal(err)
	}
	r := Round{Label: "tiered", Workload: "ycsb", Params: map[string]string{"mix": "a", "records": "400", "value_size": "4000", "zipf": "0"},
		Clients: 4, Duration: 2 * time.Second,
		Interference: Interference{Network: "processes"}, Disagg: Disagg{Memnodes: true, MemoryMB: 1, CacheMB: 1}}
	seen, quotas := watchQuotas(t, &r, "memnode", "memnode-")
	res, err := Run(context.Background(), r, Target{Command: []string{bin}, Progress: seen})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	tr := res.Tiers
	if tr == nil {
		t.Fatalf("no tier figures; warnings %v", res.Warnings)
	}
	if res.Committed == 0 || tr.CacheHits+tr.MemoryHits+tr.StorageReads == 0 || tr.RemoteCalls == 0 || !(tr.RemoteP50Ms > 0) {
		t.Errorf("committed %d, tiers %+v: want commits, reads in the tiers and timed remote calls", res.Committed, *tr)
	}
	if s := tr.CachePct + tr.MemoryPct + tr.StoragePct; s < 99.9 || s > 100.1 {
		t.Errorf("tier percentages sum to %v, want 100", s)
	}
	if tr.MemoryMB != 1 || tr.CacheMB != 1 {
		t.Errorf("tiers report memory %d MiB, cache %d MiB; want 1 and 1", tr.MemoryMB, tr.CacheMB)
	}
	var memnodes int
	for name := range res.CPUPercent {
		if strings.HasPrefix(name, "memnode.") {
			memnodes++
		}
	}
	if memnodes != 2 {
		t.Errorf("processes measured: %v, want both memory nodes among them", res.CPUPercent)
	}
	if os.Geteuid() == 0 {
		if q := quotas(); len(q) != 2 || q["memnode-peer0-org1"] != "50000" || q["memnode-peer0-org2"] != "50000" {
			t.Errorf("memory nodes' cpu.cfs_quota_us during the round: %v, want 50000 (0.5 cores of 100 ms) for both", q)
		}
	}
}

// TestComputeRound runs a real K-Means round on one peer with a memory
// node and two compute nodes (processes of their own): the round commits,
// the primary's gateway spread the proposals over both compute nodes and
// endorsed none itself (compute.primaryEndorses fallback), the compute
// nodes' CPU is measured, and, as root, each compute node's CPU quota is
// in the kernel during the load.
func TestComputeRound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin, err := strandBinary()
	if err != nil {
		t.Fatal(err)
	}
	r := Round{Label: "compute", Workload: "kmeans", Params: map[string]string{"points": "200", "n": "50", "k": "5", "dims": "10"},
		Clients: 4, Duration: 2 * time.Second, Orgs: 1, Validation: "parallel",
		Interference: Interference{Network: "processes"}, Disagg: Disagg{Memnodes: true, ComputeNodes: 2}}
	seen, quotas := watchQuotas(t, &r, "compute", "compute")
	res, err := Run(context.Background(), r, Target{Command: []string{bin}, Progress: seen})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Committed == 0 || res.Tiers == nil {
		t.Fatalf("committed %d, tiers %+v, warnings %v: want commits and tier figures", res.Committed, res.Tiers, res.Warnings)
	}
	e := res.Tiers.Endorsed
	if len(e) != 2 || e["compute0.peer0.Org1"] == 0 || e["compute1.peer0.Org1"] == 0 {
		t.Errorf("proposals answered per pool member: %v; want both compute nodes and not the primary", e)
	}
	for _, c := range []string{"compute0.peer0.Org1", "compute1.peer0.Org1"} {
		if _, ok := res.CPUPercent[c]; !ok {
			t.Errorf("processes measured: %v, want compute node %s among them", res.CPUPercent, c)
		}
	}
	if os.Geteuid() == 0 {
		if q := quotas(); len(q) != 2 || q["compute0-peer0-org1"] != "50000" || q["compute1-peer0-org1"] != "50000" {
			t.Errorf("compute nodes' cpu.cfs_quota_us during the round: %v, want 50000 (0.5 cores of 100 ms) for both", q)
		}
	}
}

// watchQuotas, as root, puts the round's nodes of role under a test
// cgroup with a quota of 0.5 cores and returns a progress callback that
// records the cpu.cfs_quota_us of the cgroups named prefix* during the
// round, and what it recorded. Not as root it changes nothing and
// records nothing.
func watchQuotas(t *testing.T, r *Round, role, prefix string) (func(Progress), func() map[string]string) {
	var mu sync.Mutex
	quotas := map[string]string{}
	got := func() map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return quotas
	}
	if os.Geteuid() != 0 {
		return nil, got
	}
	parent := cgroupTestParent(t)
	r.CgroupParent, r.CPUQuota = parent, map[string]float64{role: 0.5}
	return func(Progress) {
		mu.Lock()
		defer mu.Unlock()
		_ = filepath.WalkDir(parent, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), prefix) {
				b, _ := os.ReadFile(filepath.Join(path, "cpu.cfs_quota_us"))
				quotas[d.Name()] = strings.TrimSpace(string(b))
			}
			return nil
		})
	}, got
}
