package bench

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/strand-ledger/strand/isolation"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
	"github.com/strand-ledger/strand/localnet"
)

// Memory limits (Disagg.MemoryLimitMB). On a machine whose RAM is many
// times a round's data set, the operating system's page cache holds the
// whole storage tier and a read the memory tier misses is a copy from
// RAM: the round would measure a machine with far more memory than its
// memory tier claims. A memory node held to memory_limit_mb runs with the
// RAM of a smaller machine instead:
//
//   - it starts in a memory cgroup of its own,
//     DefaultMemoryParents[i]/strand-bench-mem-PID/NODE, moved there as
//     soon as its process started (localnet.UpOptions.Started), before it
//     opens its storage, so that the page cache of every file it writes
//     and reads is charged to it; the cgroup's limit counts that page
//     cache with its Go heap, Pebble's block cache and memtables, and
//     the kernel reclaims the page cache at the limit: a storage-tier
//     read it no longer holds is a read from the disk;
//   - GOMEMLIMIT (goMemLimit) keeps its Go heap below the limit less
//     Pebble's block cache, two memtables and memLimitFloor of page
//     cache, so that the heap collects sooner rather than the cgroup's
//     OOM killer ending the node.
//
// Nothing is slowed: the storage tier is the same Pebble on the same
// disk; what the limit takes away is RAM the modelled machine lacks. The
// cgroups are removed when the network closes, and those of a harness
// killed before that by the next round that opens any (their memory
// nodes die with the harness: localnet.UpOptions.DieWithCaller).

// memLimitRoles are the keys of memory_limit_mb.
var memLimitRoles = []string{localnet.MemnodeKind}

// memLimitFloor is the page cache a memory node's GOMEMLIMIT leaves at
// least, MiB: Pebble's index and filter blocks and the WAL's tail.
const memLimitFloor = 8

// minMemLimitMB is the smallest memory_limit_mb: a memory node's Go
// runtime, gRPC and TLS alone take about 30 MiB.
const minMemLimitMB = 32

func (d Disagg) validateMemoryLimit() error {
	for _, role := range slices.Sorted(maps.Keys(d.MemoryLimitMB)) {
		mb := d.MemoryLimitMB[role]
		switch {
		case !slices.Contains(memLimitRoles, role):
			return fmt.Errorf("memory_limit_mb.%s: want %s (the only node kind a round holds to a memory limit)", role, strings.Join(memLimitRoles, ", "))
		case !d.Memnodes:
			return fmt.Errorf("memory_limit_mb.%s = %d: want it only with memnodes: true", role, mb)
		case mb < minMemLimitMB || mb > isolation.MaxMemoryLimit>>20:
			return fmt.Errorf("memory_limit_mb.%s = %d: want %d to %d MiB", role, mb, minMemLimitMB, isolation.MaxMemoryLimit>>20)
		case mb < d.storageCacheMB()+memLimitFloor+minMemLimitMB/2:
			return fmt.Errorf("memory_limit_mb.%s = %d: want at least %d MiB with storage_cache_mb %d (the block cache and %d MiB of page cache must fit with the Go heap)",
				role, mb, d.storageCacheMB()+memLimitFloor+minMemLimitMB/2, d.storageCacheMB(), memLimitFloor)
		}
	}
	return nil
}

// storageCacheMB is the memory nodes' Pebble block cache in MiB.
func (d Disagg) storageCacheMB() int {
	if d.StorageCacheMB > 0 {
		return d.StorageCacheMB
	}
	return 128
}

// goMemLimit is the GOMEMLIMIT of a node held to limitMB, in bytes: the
// limit less Pebble's block cache, two memtables (Pebble allocates them
// outside the Go heap) and memLimitFloor, and at least a quarter of it.
func goMemLimit(limitMB, storageCacheMB int) int64 {
	memtables := int(2 * pebbledb.DefaultMemTableSize >> 20)
	mb := max(limitMB-storageCacheMB-memtables-memLimitFloor, limitMB/4)
	return int64(mb) << 20
}

// memLimits are a process network's memory cgroups.
type memLimits struct {
	mem   *isolation.Memory
	limit map[string]int // node name → MiB
	pid   map[string]int // node name → its process, once started
	names []string
	logf  func(string, ...any) // nil: none
}

// openMemLimits makes a memory cgroup for every memory node of l that d
// limits (nil, nil when it limits none), removing those of harnesses
// that died without removing theirs.
func openMemLimits(d Disagg, l *localnet.Layout, logf func(string, ...any)) (*memLimits, error) {
	mb := d.MemoryLimitMB[localnet.MemnodeKind]
	if mb == 0 || len(l.Memnodes) == 0 {
		return nil, nil
	}
	ml := &memLimits{limit: map[string]int{}, pid: map[string]int{}, logf: logf}
	var comps []string
	for _, n := range l.Memnodes {
		ml.limit[n.Name] = mb
		ml.names = append(ml.names, n.Name)
		comps = append(comps, componentName(n.Name))
	}
	mem, err := isolation.OpenMemory(isolation.ActuatorOptions{Prefix: "strand-bench-mem", Components: comps})
	if err != nil {
		return nil, fmt.Errorf("memory_limit_mb needs a writable memory cgroup controller (run as root; tried %s): %w", strings.Join(isolation.DefaultMemoryParents, ", "), err)
	}
	for _, d := range mem.Leftovers() {
		ml.log("removed the memory cgroups of a run that died without cleaning up: %s", d)
	}
	ml.mem = mem
	for _, n := range ml.names {
		if err := mem.SetLimit(componentName(n), int64(mb)<<20); err != nil {
			return nil, errors.Join(err, mem.Close())
		}
	}
	return ml, nil
}

func (ml *memLimits) log(format string, args ...any) {
	if ml.logf != nil {
		ml.logf(format, args...)
	}
}

// env is the environment of node n's process: GOMEMLIMIT for a limited one.
func (ml *memLimits) env(d Disagg) func(localnet.Node) []string {
	return func(n localnet.Node) []string {
		mb, ok := ml.limit[n.Name]
		if !ok {
			return nil
		}
		return []string{"GOMEMLIMIT=" + strconv.FormatInt(goMemLimit(mb, d.storageCacheMB()), 10)}
	}
}

// started moves a limited node into its cgroup as soon as it started.
func (ml *memLimits) started(p localnet.Proc) error {
	if _, ok := ml.limit[p.Name]; !ok {
		return nil
	}
	if err := ml.mem.Move(componentName(p.Name), p.PID); err != nil {
		return err
	}
	ml.pid[p.Name] = p.PID
	return nil
}

// close removes the cgroups (call it once the processes stopped).
func (ml *memLimits) close() error {
	if ml == nil {
		return nil
	}
	return ml.mem.Close()
}

// memSample is what sample read of each limited node.
type memSample map[string]memNodeSample

type memNodeSample struct {
	stat      isolation.MemoryStat
	readBytes int64 // /proc/PID/io read_bytes: what its reads fetched from the disk
	err       error
}

// sample reads every limited node's cgroup counters and disk reads.
func (ml *memLimits) sample() memSample {
	if ml == nil {
		return nil
	}
	out := memSample{}
	for _, n := range ml.names {
		var s memNodeSample
		s.stat, s.err = ml.mem.Stat(componentName(n))
		if s.err == nil {
			s.readBytes, s.err = procReadBytes(ml.pid[n])
		}
		out[n] = s
	}
	return out
}

// procReadBytes reads pid's read_bytes from /proc/PID/io: the bytes its
// reads made the kernel fetch from a block device (page cache hits not
// counted).
func procReadBytes(pid int) (int64, error) {
	file := fmt.Sprintf("/proc/%d/io", pid)
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "read_bytes:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s has no read_bytes line", file)
}

// MemoryLimitResult is one memory node's memory cgroup over a round
// (Disagg.MemoryLimitMB): its limit, what it held at the load's end, and
// what its reads fetched from the disk during the load.
type MemoryLimitResult struct {
	Node         string  `json:"node"`
	LimitMB      int     `json:"limit_mb"`
	GoMemLimitMB float64 `json:"gomemlimit_mb"`
	UsageMB      float64 `json:"usage_mb"`     // charged at the load's end: heap, Pebble's caches and page cache
	PeakMB       float64 `json:"peak_mb"`      // the most it held since its start (setup included)
	CacheMB      float64 `json:"cache_mb"`     // page cache at the load's end
	AnonMB       float64 `json:"anon_mb"`      // anonymous memory (Go heap, Pebble's block cache and memtables)
	DiskReadMB   float64 `json:"disk_read_mb"` // /proc/PID/io read_bytes over the load
	OOMKills     int64   `json:"oom_kills"`
}

// memoryResult compares two samples; errors become one warning each.
func (ml *memLimits) result(d Disagg, before, after memSample) ([]MemoryLimitResult, []string) {
	var out []MemoryLimitResult
	var warns []string
	mib := func(b int64) float64 { return round2(float64(b) / (1 << 20)) }
	for _, n := range ml.names {
		a, b := before[n], after[n]
		if err := errors.Join(a.err, b.err); err != nil {
			warns = append(warns, fmt.Sprintf("no memory cgroup figures for %s: %v", n, err))
			continue
		}
		out = append(out, MemoryLimitResult{Node: n, LimitMB: ml.limit[n],
			GoMemLimitMB: mib(goMemLimit(ml.limit[n], d.storageCacheMB())),
			UsageMB:      mib(b.stat.Usage), PeakMB: mib(b.stat.Peak), CacheMB: mib(b.stat.Cache), AnonMB: mib(b.stat.Anon),
			DiskReadMB: mib(b.readBytes - a.readBytes), OOMKills: b.stat.OOMKills})
	}
	return out, warns
}
