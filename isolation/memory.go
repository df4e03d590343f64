package isolation

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Memory limits. A memory cgroup caps what its processes may hold in RAM:
// their anonymous memory (the Go heap, Pebble's block cache and
// memtables) and the page cache charged to it (a page is charged to the
// cgroup of the process that first touched it). At the limit the kernel
// reclaims the cgroup's page cache first; what cannot be reclaimed ends
// in the cgroup's OOM killer. The bench uses it so that a node runs with
// the RAM of a smaller machine (FlexChain's memory scaling): reads the
// node's own page cache no longer holds go to the disk. The controller
// never sets one.
//
// Files: cgroup v1 memory.limit_in_bytes (and memory.memsw.limit_in_bytes
// where swap is accounted, so that the limit is not a limit on RAM only),
// memory.usage_in_bytes, memory.max_usage_in_bytes, memory.stat,
// memory.failcnt, memory.oom_control; v2 memory.max, memory.swap.max,
// memory.current, memory.peak, memory.stat, memory.events.

// DefaultMemoryParents are the directories OpenMemory tries, in order,
// when ActuatorOptions.Parent is empty: the cgroup v1 memory hierarchy,
// then the cgroup v2 root.
var DefaultMemoryParents = []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup"}

// MinMemoryLimit and MaxMemoryLimit bound a limit in bytes: below 4 MiB
// a Go process does not start; above 1 TiB is refused as a likely typo.
const (
	MinMemoryLimit = 4 << 20
	MaxMemoryLimit = 1 << 40
)

// Memory owns one cgroup subtree in a memory hierarchy,
// Parent/Prefix-PID, with one child cgroup per component, and sets their
// memory limits. Its invariants are Actuator's: it writes only in its own
// subtree and those of dead runs it removes, and moves processes out of a
// cgroup before removing it. A Memory is for one goroutine.
type Memory struct {
	a *Actuator
}

// OpenMemory removes the leftovers of earlier runs that died without
// Close (subtrees Parent/Prefix-PID whose PID is not alive) and makes
// this run's subtree with a cgroup per component, no limit set. When no
// parent has a writable memory controller it returns an error wrapping
// ErrNoCgroup that names each path tried and why it failed.
func OpenMemory(opts ActuatorOptions) (*Memory, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return openFirst(opts, DefaultMemoryParents, " (memory controller)", openMemory)
}

func openMemory(parent string, opts ActuatorOptions) (*Memory, error) {
	v2, err := detectMemory(parent)
	if err != nil {
		return nil, err
	}
	a := &Actuator{parent: parent, v2: v2, groups: make(map[string]string), shares: make(map[string]Shares)}
	if a.leftovers, err = a.removeLeftovers(opts.Prefix); err != nil {
		return nil, err
	}
	a.dir = filepath.Join(parent, fmt.Sprintf("%s-%d", opts.Prefix, os.Getpid()))
	if err := os.Mkdir(a.dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: cannot create this run's memory cgroup: %w%s", parent, err, hint(err))
	}
	m := &Memory{a: a}
	if v2 {
		ctl := filepath.Join(a.dir, "cgroup.subtree_control")
		if err := writeFile(ctl, "+memory"); err != nil {
			return nil, errors.Join(fmt.Errorf("enabling memory in %s: %w%s", ctl, err, hint(err)), m.Close())
		}
	}
	for _, c := range opts.Components {
		g := filepath.Join(a.dir, c)
		if err := os.Mkdir(g, 0o755); err != nil {
			return nil, errors.Join(fmt.Errorf("creating cgroup %s: %w%s", g, err, hint(err)), m.Close())
		}
		a.groups[c] = g
		a.names = append(a.names, c)
	}
	return m, nil
}

// detectMemory says whether parent is a cgroup v2 directory that enables
// memory for its children (else a v1 memory hierarchy directory), or why
// it is neither.
func detectMemory(parent string) (v2 bool, err error) {
	return detectController(parent, "memory", "memory.limit_in_bytes")
}

// CheckMemoryLimit reports whether bytes is a valid limit: 0 (none) or
// MinMemoryLimit to MaxMemoryLimit. field names it in the error.
func CheckMemoryLimit(field string, bytes int64) error {
	if bytes != 0 && (bytes < MinMemoryLimit || bytes > MaxMemoryLimit) {
		return fmt.Errorf("%w: %s is %d bytes, want 0 (no limit) or %d to %d", ErrBadConfig, field, bytes, int64(MinMemoryLimit), int64(MaxMemoryLimit))
	}
	return nil
}

// Hierarchy returns "v1" or "v2".
func (m *Memory) Hierarchy() string { return m.a.Hierarchy() }

// Dir returns this run's subtree, Parent/Prefix-PID.
func (m *Memory) Dir() string { return m.a.dir }

// Leftovers returns the subtrees of dead earlier runs that OpenMemory
// removed.
func (m *Memory) Leftovers() []string { return m.a.leftovers }

// Group returns component's cgroup directory.
func (m *Memory) Group(component string) (string, error) { return m.a.Group(component) }

// Move moves process pid into component's cgroup. Pages it touched
// before stay charged where they were (v1's move_charge_at_immigrate is
// deprecated and v2 has none): move a process before it loads the data
// the limit is about.
func (m *Memory) Move(component string, pid int) error { return m.a.Move(component, pid) }

// Procs returns the processes in component's cgroup.
func (m *Memory) Procs(component string) ([]int, error) { return m.a.Procs(component) }

// SetLimit caps component's cgroup at bytes of RAM, page cache included,
// and no swap (0 removes the cap). Lowering it below what the cgroup
// holds makes the kernel reclaim first; v1 refuses (EBUSY) when it cannot.
func (m *Memory) SetLimit(component string, bytes int64) error {
	if err := CheckMemoryLimit("memory limit of "+component, bytes); err != nil {
		return err
	}
	g, err := m.a.Group(component)
	if err != nil {
		return err
	}
	type write struct{ file, val string }
	var ws []write
	val := strconv.FormatInt(bytes, 10)
	switch {
	case m.a.v2 && bytes == 0:
		ws = []write{{"memory.max", "max"}, {"memory.swap.max", "max"}}
	case m.a.v2:
		ws = []write{{"memory.max", val}, {"memory.swap.max", "0"}}
	case bytes == 0:
		ws = []write{{"memory.memsw.limit_in_bytes", "-1"}, {"memory.limit_in_bytes", "-1"}}
	default:
		// memsw (RAM + swap) must stay at or above the RAM limit: set
		// RAM first when lowering from unlimited, then memsw to match.
		ws = []write{{"memory.limit_in_bytes", val}, {"memory.memsw.limit_in_bytes", val}}
	}
	if !m.a.v2 && bytes != 0 {
		// Raising: memsw first, or the RAM limit would exceed it (EINVAL).
		if cur, err := readMemoryStat(g, false); err == nil && cur.Limit != 0 && bytes > cur.Limit {
			ws[0], ws[1] = ws[1], ws[0]
		}
	}
	for _, w := range ws {
		file := filepath.Join(g, w.file)
		if err := writeFile(file, w.val); err != nil {
			if errors.Is(err, fs.ErrNotExist) && (strings.Contains(w.file, "swap") || strings.Contains(w.file, "memsw")) {
				continue // no swap accounting in this kernel: no swap to limit
			}
			return fmt.Errorf("isolation: writing %q to %s: %w%s", w.val, file, err, hint(err))
		}
	}
	return nil
}

// MemoryStat is a memory cgroup's counters.
type MemoryStat struct {
	Limit int64 // bytes; 0: none
	Usage int64 // bytes charged now: anonymous memory and page cache
	Peak  int64 // the most Usage has been (v1 max_usage_in_bytes, v2 memory.peak; 0 where the kernel has no peak)
	// Cache is page cache (v1 cache, v2 file), Anon anonymous memory
	// (v1 rss, v2 anon), both in bytes.
	Cache, Anon int64
	// MajorFaults counts page faults that read from the disk
	// (pgmajfault): memory-mapped files and pages reclaimed and needed again.
	MajorFaults int64
	// LimitHits counts the charges refused at the limit (v1 failcnt,
	// v2 memory.events max; reclaiming page cache to make room may not
	// count); OOMKills the processes the cgroup's OOM killer ended.
	LimitHits, OOMKills int64
}

// Stat reads component's counters.
func (m *Memory) Stat(component string) (MemoryStat, error) {
	g, err := m.a.Group(component)
	if err != nil {
		return MemoryStat{}, err
	}
	return readMemoryStat(g, m.a.v2)
}

func readMemoryStat(g string, v2 bool) (MemoryStat, error) {
	var s MemoryStat
	read := func(name string) (map[string]int64, error) {
		b, err := os.ReadFile(filepath.Join(g, name))
		if err != nil {
			return nil, fmt.Errorf("isolation: reading %s: %w", filepath.Join(g, name), err)
		}
		out := map[string]int64{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) == 1 && f[0] == "max":
				out[""] = 0
			case len(f) == 1:
				out[""], _ = strconv.ParseInt(f[0], 10, 64)
			case len(f) == 2:
				out[f[0]], _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
		return out, nil
	}
	names := []string{"memory.limit_in_bytes", "memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.stat", "memory.failcnt", "memory.oom_control"}
	if v2 {
		names = []string{"memory.max", "memory.current", "memory.peak", "memory.stat", "memory.events", ""}
	}
	vals := make([]map[string]int64, len(names))
	for i, n := range names {
		if n == "" || (v2 && n == "memory.peak" && !exists(filepath.Join(g, n))) {
			vals[i] = map[string]int64{}
			continue
		}
		var err error
		if vals[i], err = read(n); err != nil {
			return s, err
		}
	}
	s.Limit, s.Usage, s.Peak = vals[0][""], vals[1][""], vals[2][""]
	st := vals[3]
	if v2 {
		s.Cache, s.Anon, s.MajorFaults = st["file"], st["anon"], st["pgmajfault"]
		s.LimitHits, s.OOMKills = vals[4]["max"], vals[4]["oom_kill"]
	} else {
		s.Cache, s.Anon, s.MajorFaults = st["cache"], st["rss"], st["pgmajfault"]
		s.LimitHits, s.OOMKills = vals[4][""], vals[5]["oom_kill"]
		if s.Limit >= 1<<62 { // v1's "unlimited" is a page-rounded LONG_MAX
			s.Limit = 0
		}
	}
	return s, nil
}

// Close moves every process still in this run's cgroups to Parent (v2:
// to the root when Parent may not hold processes) and removes the
// cgroups; the page cache charged to them goes to Parent. Close after
// the first call does nothing.
func (m *Memory) Close() error {
	if m.a.closed {
		return nil
	}
	m.a.closed = true
	if err := m.a.removeTree(m.a.dir); err != nil {
		return fmt.Errorf("isolation: removing %s: %w", m.a.dir, err)
	}
	return nil
}
