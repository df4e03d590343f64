package bench

import (
	"fmt"

	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// Disagg says how a round's peers keep their state: disaggregated, as
// FlexChain's peers (docs/flexchain.md), or in the monolithic peer's own
// Pebble with a memtable of a chosen size (FlexChain's "generic XOV").
//
// With Memnodes every peer keeps its state on a memory node of its own
// (localnet.Spec.Memnodes, `strand memnode start`): a local cache in the
// peer (CacheMB), the memory tier (MemoryMB, a byte limit) and the
// storage tier (Pebble) in the memory node's process. The round then
// reports what each tier answered (TierResult).
type Disagg struct {
	// Memnodes gives every peer its own memory node; it needs network:
	// processes (a memory node is a process, so that cpu_quota.memnode
	// can cap it).
	Memnodes bool `yaml:"memnodes,omitempty" json:"memnodes,omitempty"`
	// MemoryMB is each memory node's memory tier limit (memoryMB; default
	// 256). Only with Memnodes.
	MemoryMB int `yaml:"memory_mb,omitempty" json:"memory_mb,omitempty"`
	// CacheMB is each peer's local cache in front of its memory node
	// (stateDB.memnode.cacheMB; default 64, -1 none). Only with Memnodes.
	CacheMB int `yaml:"cache_mb,omitempty" json:"cache_mb,omitempty"`
	// MemtableMB is the monolithic peer's Pebble memtable
	// (stateDB.pebble.memTableMB; default 16). Not with Memnodes: the
	// peer's state is then on its memory node.
	MemtableMB int `yaml:"memtable_mb,omitempty" json:"memtable_mb,omitempty"`
	// StateCacheMB is the monolithic peer's committer cache of recently
	// written values in front of its Pebble (pipeline.stateCacheMB;
	// default 16, -1 none). Not with Memnodes, which turns that cache off
	// so that CacheMB is the peer's only one: a pair of rounds gives both
	// peers the same bytes of cache with StateCacheMB equal to the tiered
	// round's CacheMB.
	StateCacheMB int `yaml:"state_cache_mb,omitempty" json:"state_cache_mb,omitempty"`
	// ComputeNodes gives every peer this many compute nodes, 0 to
	// localnet.MaxComputePerPeer. Only with Memnodes (compute nodes read
	// their primary's state on its memory node). The primary keeps its
	// default compute.primaryEndorses (fallback): while its compute nodes
	// are in the pool it endorses nothing and its CPU goes to validation.
	// cpu_quota.compute caps each compute node (FlexChain's Fig. 5(a)).
	ComputeNodes int `yaml:"compute_nodes,omitempty" json:"compute_nodes,omitempty"`
	// ComputeVerify is the primaries' compute.verify: compute (unset: the
	// compute nodes check stage 1's signatures) or primary (the primary
	// checks them all). Only with ComputeNodes.
	ComputeVerify string `yaml:"compute_verify,omitempty" json:"compute_verify,omitempty"`
	// StorageCacheMB is each memory node's Pebble block cache
	// (storageCacheMB; default 128). Only with Memnodes.
	StorageCacheMB int `yaml:"storage_cache_mb,omitempty" json:"storage_cache_mb,omitempty"`
	// MemoryLimitMB holds each node of a kind (only "memnode") to this
	// many MiB of RAM, page cache included: a memory cgroup of its own
	// from its start, and GOMEMLIMIT below it (memlimit.go). Needs a
	// writable memory controller (root). FlexChain's Fig. 5(b) on a
	// machine whose RAM would otherwise cache the whole storage tier.
	MemoryLimitMB map[string]int `yaml:"memory_limit_mb,omitempty" json:"memory_limit_mb,omitempty"`
}

func (d Disagg) set() bool {
	return d.Memnodes || d.MemoryMB != 0 || d.CacheMB != 0 || d.MemtableMB != 0 || d.StateCacheMB != 0 || d.ComputeNodes != 0 || d.ComputeVerify != "" || d.StorageCacheMB != 0 || len(d.MemoryLimitMB) != 0
}

// validate checks the fields against each other and the round's network
// (processes: network is "processes"), state database and CPU quotas.
func (d Disagg) validate(processes bool, stateDB string, quota map[string]float64) error {
	switch {
	case d.ComputeNodes < 0 || d.ComputeNodes > localnet.MaxComputePerPeer:
		return fmt.Errorf("compute_nodes = %d: want 0 to %d compute nodes per peer", d.ComputeNodes, localnet.MaxComputePerPeer)
	case d.ComputeNodes != 0 && !d.Memnodes:
		return fmt.Errorf("compute_nodes = %d: want it only with memnodes: true (compute nodes read their primary's state on its memory node)", d.ComputeNodes)
	case d.ComputeVerify != "" && d.ComputeVerify != "compute" && d.ComputeVerify != "primary":
		return fmt.Errorf("compute_verify = %q: want compute (the default) or primary", d.ComputeVerify)
	case d.ComputeVerify != "" && d.ComputeNodes == 0:
		return fmt.Errorf("compute_verify = %q: want it only with compute_nodes of 1 or more", d.ComputeVerify)
	case quota["compute"] != 0 && d.ComputeNodes == 0:
		return fmt.Errorf("cpu_quota.compute = %g: want it only with compute_nodes of 1 or more", quota["compute"])
	case d.Memnodes && !processes:
		return fmt.Errorf("memnodes = true: want network: processes (each memory node is a process of its own)")
	case d.MemoryMB != 0 && !d.Memnodes:
		return fmt.Errorf("memory_mb = %d: want it only with memnodes: true (it is the memory tier's byte limit)", d.MemoryMB)
	case d.MemoryMB < 0 || d.MemoryMB > 1<<20:
		return fmt.Errorf("memory_mb = %d: want 1 to 1048576 (unset: 256)", d.MemoryMB)
	case d.CacheMB != 0 && !d.Memnodes:
		return fmt.Errorf("cache_mb = %d: want it only with memnodes: true (it is the peer's local cache in front of its memory node)", d.CacheMB)
	case d.CacheMB < -1 || d.CacheMB > 1<<20:
		return fmt.Errorf("cache_mb = %d: want -1 (no local cache) or 1 to 1048576 (unset: 64)", d.CacheMB)
	case d.MemtableMB != 0 && d.Memnodes:
		return fmt.Errorf("memtable_mb = %d: want it only without memnodes (it sizes the monolithic peer's own Pebble; a peer with a memory node keeps no state of its own)", d.MemtableMB)
	case d.MemtableMB < 0 || d.MemtableMB > 4095:
		return fmt.Errorf("memtable_mb = %d: want 1 to 4095 (unset: 16)", d.MemtableMB)
	case d.MemtableMB != 0 && stateDB != "" && stateDB != "pebble":
		return fmt.Errorf("memtable_mb = %d: want it only with state_db pebble (have %q)", d.MemtableMB, stateDB)
	case d.StateCacheMB != 0 && d.Memnodes:
		return fmt.Errorf("state_cache_mb = %d: want it only without memnodes (a peer with a memory node has cache_mb as its only cache)", d.StateCacheMB)
	case d.StateCacheMB < -1 || d.StateCacheMB > 65536:
		return fmt.Errorf("state_cache_mb = %d: want -1 (none) or 1 to 65536 (unset: 16)", d.StateCacheMB)
	case quota["memnode"] != 0 && !d.Memnodes:
		return fmt.Errorf("cpu_quota.memnode = %g: want it only with memnodes: true", quota["memnode"])
	case d.StorageCacheMB != 0 && !d.Memnodes:
		return fmt.Errorf("storage_cache_mb = %d: want it only with memnodes: true (it is the memory node's Pebble block cache)", d.StorageCacheMB)
	case d.StorageCacheMB < 0 || d.StorageCacheMB > 65536:
		return fmt.Errorf("storage_cache_mb = %d: want 1 to 65536 (unset: 128)", d.StorageCacheMB)
	}
	return d.validateMemoryLimit()
}

// tuneNode sizes a generated peer's state database.
func (d Disagg) tuneNode(n *node.NodeConfig) {
	if n.Role != "peer" {
		return
	}
	if d.MemtableMB > 0 {
		n.StateDB.Pebble.MemTableMB = d.MemtableMB
	}
	if d.CacheMB != 0 {
		n.StateDB.Memnode.CacheMB = d.CacheMB
	}
	if d.StateCacheMB != 0 {
		n.Pipeline.StateCacheMB = d.StateCacheMB
	}
	n.Compute.Verify = d.ComputeVerify
	if d.Memnodes {
		// The committer's cache of recently written values
		// (pipeline.stateCacheMB) would answer most reads before the
		// memory node's client sees them: off, the client's local cache
		// (cache_mb) is the peer's only one, and every read is counted
		// in one of the tiers.
		n.Pipeline.StateCacheMB = -1
	}
}

// tuneMemnode sizes a generated memory node's memory tier, and runs it
// on one core (cores: 1): it serves one peer, does microseconds of work
// per call, and on this small machine two cores cost it a fifth more
// CPU in wake-ups for the same calls (docs/flexchain.md).
func (d Disagg) tuneMemnode(m *node.MemnodeConfig) {
	m.Cores = 1
	if d.MemoryMB > 0 {
		m.MemoryMB = d.MemoryMB
	}
	if d.StorageCacheMB > 0 {
		m.StorageCacheMB = d.StorageCacheMB
	}
}

// spec adds the disaggregation to a network's spec.
func (d Disagg) spec(s localnet.Spec) localnet.Spec {
	s.Memnodes, s.Compute = d.Memnodes, d.ComputeNodes
	s.TuneNode, s.TuneMemnode = d.tuneNode, d.tuneMemnode
	return s
}
