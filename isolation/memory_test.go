//go:build linux

package isolation

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const v1MemRoot = "/sys/fs/cgroup/memory"

// memParent makes a cgroup of the test's own in the v1 memory hierarchy,
// removed at cleanup (and by the next run's RemoveDead if the test
// binary is killed first), or skips the test saying why it cannot.
func memParent(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("memory cgroup tests need root (euid is %d)", os.Geteuid())
	}
	if !exists(filepath.Join(v1MemRoot, "memory.limit_in_bytes")) {
		t.Skipf("memory cgroup tests need the cgroup v1 memory controller at %s", v1MemRoot)
	}
	if _, err := RemoveDead(v1MemRoot, "strand-test"); err != nil {
		t.Fatalf("removing the cgroups of killed test runs: %v", err)
	}
	p := filepath.Join(v1MemRoot, fmt.Sprintf("strand-test-%d-%d", os.Getpid(), testParents.Add(1)))
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Skipf("cgroup v1 memory hierarchy not writable: %v", err)
	}
	t.Cleanup(func() {
		if err := RemoveTree(v1MemRoot, p); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return p
}

// TestMemoryLimit holds a process that writes 48 MiB to a file to a
// 16 MiB limit: the page cache it fills is charged to its cgroup and
// reclaimed at the limit, so the cgroup never holds more than the limit
// (what a machine with that much RAM would cache), and the limit is
// read back, raised and removed.
func TestMemoryLimit(t *testing.T) {
	parent := memParent(t)
	m, err := OpenMemory(ActuatorOptions{Parent: parent, Prefix: "strand-mem", Components: []string{"memnode"}})
	if err != nil {
		t.Fatalf("OpenMemory: %v", err)
	}
	defer m.Close()
	const limit = 16 << 20
	if err := m.SetLimit("memnode", limit); err != nil {
		t.Fatalf("SetLimit: %v", err)
	}
	file := filepath.Join(t.TempDir(), "data")
	c := exec.Command("sh", "-c", `read go && dd if=/dev/zero of="$1" bs=1M count=48 2>/dev/null && cat "$1" >/dev/null`, "sh", file)
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("starting sh: %v", err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	if err := m.Move("memnode", c.Process.Pid); err != nil {
		t.Fatalf("Move: %v", err)
	}
	fmt.Fprintln(in, "go") // the writes start once it is inside
	if err := c.Wait(); err != nil {
		t.Fatalf("sh in a 16 MiB cgroup: %v", err)
	}
	s, err := m.Stat("memnode")
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	t.Logf("after writing and reading 48 MiB under a 16 MiB limit: %+v", s)
	if s.Limit != limit {
		t.Errorf("Stat.Limit = %d, want %d", s.Limit, limit)
	}
	if s.Peak > limit || s.Usage > limit {
		t.Errorf("usage %d, peak %d: want both at most the limit %d", s.Usage, s.Peak, limit)
	}
	if s.Cache < limit/2 {
		t.Errorf("cache %d bytes: want the file's pages charged here, up to the limit (48 MiB went through it)", s.Cache)
	}
	if s.OOMKills != 0 {
		t.Errorf("%d OOM kills: page cache should be reclaimed, not processes killed", s.OOMKills)
	}
	g, _ := m.Group("memnode")
	for _, want := range []struct {
		bytes int64
		file  string
		val   string
	}{{64 << 20, "memory.limit_in_bytes", strconv.Itoa(64 << 20)}, {0, "memory.limit_in_bytes", ""}} {
		if err := m.SetLimit("memnode", want.bytes); err != nil {
			t.Fatalf("SetLimit(%d): %v", want.bytes, err)
		}
		b, _ := os.ReadFile(filepath.Join(g, want.file))
		got := strings.TrimSpace(string(b))
		if want.val != "" && got != want.val || want.val == "" && len(got) < 15 {
			t.Errorf("after SetLimit(%d) %s holds %s", want.bytes, want.file, got)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if exists(m.Dir()) {
		t.Errorf("%s still there after Close", m.Dir())
	}
}

// TestMemoryLeftovers: the subtree of a run killed before Close (its PID
// dead) is removed by the next OpenMemory, which names it.
func TestMemoryLeftovers(t *testing.T) {
	parent := memParent(t)
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(parent, fmt.Sprintf("strand-mem-%d", c.Process.Pid))
	if err := os.MkdirAll(filepath.Join(dead, "memnode"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := OpenMemory(ActuatorOptions{Parent: parent, Prefix: "strand-mem", Components: []string{"memnode"}})
	if err != nil {
		t.Fatalf("OpenMemory: %v", err)
	}
	defer m.Close()
	if got := m.Leftovers(); len(got) != 1 || got[0] != dead {
		t.Errorf("Leftovers() = %v, want [%s]", got, dead)
	}
	if exists(dead) {
		t.Errorf("%s still there", dead)
	}
}

// TestMemoryRefused: a directory that is no memory cgroup is refused
// with ErrNoCgroup and its path (no root needed).
func TestMemoryRefused(t *testing.T) {
	dir := t.TempDir()
	_, err := OpenMemory(ActuatorOptions{Parent: dir, Components: []string{"memnode"}})
	if !errors.Is(err, ErrNoCgroup) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "memory.limit_in_bytes") {
		t.Fatalf("OpenMemory(%s) = %v, want ErrNoCgroup naming the path and the file it looked for", dir, err)
	}
	if err := CheckMemoryLimit("memory_limit_mb.memnode", 1<<20); !errors.Is(err, ErrBadConfig) {
		t.Errorf("CheckMemoryLimit(1 MiB) = %v, want ErrBadConfig", err)
	}
}
