//go:build linux

package isolation

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

const v1Root = "/sys/fs/cgroup/cpu"

var testParents atomic.Int64

// testParent makes a fresh cgroup v1 cpu directory, v1Root/strand-test-PID-N,
// for one test and removes it when the test ends, after killing the
// processes the test started (kill) and moving nothing else: only the
// test's own processes are ever in it. It skips the test when not root or
// when the v1 cpu hierarchy is absent or not writable.
func testParent(t *testing.T, kill *[]*exec.Cmd) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("cgroup tests need root (euid is %d)", os.Geteuid())
	}
	if !exists(filepath.Join(v1Root, "cpu.shares")) {
		t.Skipf("cgroup tests need the cgroup v1 cpu controller at %s", v1Root)
	}
	if _, err := RemoveDead(v1Root, "strand-test"); err != nil {
		t.Fatalf("removing the cgroups of killed test runs: %v", err)
	}
	p := filepath.Join(v1Root, fmt.Sprintf("strand-test-%d-%d", os.Getpid(), testParents.Add(1)))
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Skipf("cgroup v1 cpu hierarchy not writable: %v", err)
	}
	t.Cleanup(func() {
		for _, c := range *kill {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		// Children first; a test that failed midway may have left some.
		var dirs []string
		_ = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil {
				t.Errorf("cleanup: rmdir %s: %v", d, err)
			}
		}
	})
	return p
}

// startSleep starts a process the test owns and kills at cleanup.
func startSleep(t *testing.T, kill *[]*exec.Cmd) int {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatalf("starting sleep: %v", err)
	}
	*kill = append(*kill, c)
	return c.Process.Pid
}

// cgroupOf returns pid's path in the v1 cpu hierarchy, from /proc.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatalf("reading pid %d's cgroups: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		// "N:cpu:/path" or "N:cpu,cpuacct:/path"
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), "cpu") {
			return filepath.Join(v1Root, f[2])
		}
	}
	t.Fatalf("pid %d is in no cpu cgroup: %q", pid, b)
	return ""
}

// TestActuatorV1 drives the real cgroup v1 hierarchy: Open makes one
// cgroup per component, a real process moves in, shares are written and
// read back (also from the file the kernel serves), and Close moves the
// process back to Parent, alive, and removes every cgroup it made.
func TestActuatorV1(t *testing.T) {
	var kill []*exec.Cmd
	parent := testParent(t, &kill)
	a, err := Open(ActuatorOptions{Parent: parent, Components: []string{"orderer", "peer"}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer a.Close()
	if a.Hierarchy() != "v1" || a.Dir() != filepath.Join(parent, fmt.Sprintf("strand-%d", os.Getpid())) {
		t.Fatalf("Hierarchy %s, Dir %s; want v1 and %s/strand-%d", a.Hierarchy(), a.Dir(), parent, os.Getpid())
	}
	pid := startSleep(t, &kill)
	if err := a.Move("peer", pid); err != nil {
		t.Fatalf("Move: %v", err)
	}
	if got, want := cgroupOf(t, pid), filepath.Join(a.Dir(), "peer"); got != want {
		t.Fatalf("after Move, pid %d is in %s, want %s", pid, got, want)
	}
	if got, err := a.Get("peer"); err != nil || got != DefaultShares {
		t.Fatalf("new cgroup's shares %d (%v), want %d", got, err, DefaultShares)
	}
	if err := a.Apply([]Change{{Component: "peer", From: 1024, To: 3072}, {Component: "orderer", From: 1024, To: 1843}}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	for comp, want := range map[string]Shares{"peer": 3072, "orderer": 1843} {
		raw, err := os.ReadFile(filepath.Join(a.Dir(), comp, "cpu.shares"))
		got, _ := a.Get(comp)
		if err != nil || strings.TrimSpace(string(raw)) != strconv.Itoa(int(want)) || got != want {
			t.Errorf("%s: cpu.shares file %q (%v), Get %d; want %d", comp, raw, err, got, want)
		}
	}
	for _, c := range []struct {
		comp string
		s    Shares
		want string
	}{
		{"peer", 1, "shares 1 for peer, want in [2, 262144]"},
		{"peer", MaxShares + 1, "shares 262145 for peer, want in [2, 262144]"},
		{"gateway", 2048, `no cgroup for component "gateway" in ` + a.Dir() + " (have orderer, peer)"},
	} {
		if err := a.Set(c.comp, c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Set(%s, %d) = %v, want an error containing %q", c.comp, c.s, err, c.want)
		}
	}
	if err := a.Move("peer", 1<<30); err == nil || !strings.Contains(err.Error(), "moving pid 1073741824 into") {
		t.Errorf("Move of a pid that does not exist = %v, want an error naming the pid", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if exists(a.Dir()) {
		t.Errorf("after Close, %s still exists", a.Dir())
	}
	if got := cgroupOf(t, pid); got != parent {
		t.Errorf("after Close, pid %d is in %s, want Parent %s", pid, got, parent)
	}
	if !alive(pid) {
		t.Errorf("after Close, pid %d is gone; Close must not end processes", pid)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	if err := a.Set("peer", 2048); err == nil || !strings.Contains(err.Error(), "is closed") {
		t.Errorf("Set after Close = %v, want an error saying the actuator is closed", err)
	}
}

// TestOpenRefuses checks that unusable parents and bad options are refused
// with errors naming the path or field, and that a failed Open leaves
// nothing behind.
func TestOpenRefuses(t *testing.T) {
	var kill []*exec.Cmd
	parent := testParent(t, &kill)
	plain := t.TempDir()
	for _, c := range []struct {
		opts ActuatorOptions
		is   error
		want string
	}{
		{ActuatorOptions{Parent: "sys/fs/cgroup", Components: []string{"peer"}}, ErrBadConfig, `ActuatorOptions.Parent is "sys/fs/cgroup", want an absolute, clean path`},
		{ActuatorOptions{Parent: parent + "/../x", Components: []string{"peer"}}, ErrBadConfig, "want an absolute, clean path"},
		{ActuatorOptions{Parent: parent, Prefix: "Strand", Components: []string{"peer"}}, ErrBadConfig, `ActuatorOptions.Prefix is "Strand"`},
		{ActuatorOptions{Parent: parent}, ErrBadConfig, "ActuatorOptions.Components has 0 entries"},
		{ActuatorOptions{Parent: parent, Components: []string{"peer", "../../x"}}, ErrBadConfig, `ActuatorOptions.Components[1] is "../../x"`},
		{ActuatorOptions{Parent: parent, Components: []string{"peer", "peer"}}, ErrBadConfig, `ActuatorOptions.Components[1] "peer" repeats`},
		{ActuatorOptions{Parent: parent + "/missing", Components: []string{"peer"}}, ErrNoCgroup, parent + "/missing: stat"},
		{ActuatorOptions{Parent: plain, Components: []string{"peer"}}, ErrNoCgroup, plain + ": neither cpu.shares (cgroup v1 cpu controller) nor cgroup.controllers (cgroup v2)"},
	} {
		a, err := Open(c.opts)
		if err == nil {
			a.Close()
		}
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v) = %v, want %v containing %q", c.opts, err, c.is, c.want)
		}
	}
	if _, err := Open(ActuatorOptions{Parent: parent + "/missing", Components: []string{"peer"}}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing Parent = %v, want it to wrap fs.ErrNotExist", err)
	}
	// The v2 hierarchy of a host whose cpu controller sits in v1 has no cpu
	// for its children; the error says so and how to enable it.
	if unified := "/sys/fs/cgroup/unified"; exists(filepath.Join(unified, "cgroup.subtree_control")) {
		ctl, _ := os.ReadFile(filepath.Join(unified, "cgroup.subtree_control"))
		if !strings.Contains(string(ctl), "cpu") {
			_, err := Open(ActuatorOptions{Parent: unified, Components: []string{"peer"}})
			if want := unified + ": cgroup v2 without the cpu controller for its children"; !errors.Is(err, ErrNoCgroup) || !strings.Contains(err.Error(), want) {
				t.Errorf("Open(%s) = %v, want ErrNoCgroup containing %q", unified, err, want)
			}
		}
	}
	// A second actuator in the same process collides with the first, and
	// its failure leaves the first intact.
	a, err := Open(ActuatorOptions{Parent: parent, Components: []string{"peer"}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer a.Close()
	if _, err := Open(ActuatorOptions{Parent: parent, Components: []string{"peer"}}); err == nil || !strings.Contains(err.Error(), "already open") {
		t.Errorf("second Open in one process = %v, want an error saying an actuator is already open", err)
	}
	if !exists(filepath.Join(a.Dir(), "peer")) {
		t.Errorf("the failed second Open removed the first actuator's %s", filepath.Join(a.Dir(), "peer"))
	}
}

const crashEnv = "ISOLATION_CRASH_PARENT"

// TestCrashChild is the run TestLeftoversAfterCrash kills: it does nothing
// unless started by it.
func TestCrashChild(t *testing.T) {
	parent := os.Getenv(crashEnv)
	if parent == "" {
		return
	}
	a, err := Open(ActuatorOptions{Parent: parent, Components: []string{"orderer", "peer"}})
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	if err := errors.Join(a.Move("peer", c.Process.Pid), a.Set("peer", 4096)); err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("ready %d %s\n", c.Process.Pid, a.Dir())
	select {} // until SIGKILL
}

// TestLeftoversAfterCrash runs an actuator in a child process, lets it
// move a process into its cgroup, SIGKILLs it, and checks that the next
// Open moves the orphaned process back to Parent (alive) and removes the
// dead run's cgroups, while leaving alone a subtree whose owner is alive
// and directories that are not strand's.
func TestLeftoversAfterCrash(t *testing.T) {
	var kill []*exec.Cmd
	parent := testParent(t, &kill)
	// Orphans of the killed child are reparented to this process, so that
	// the test can reap the sleep it leaves behind.
	if err := prctlSubreaper(); err != nil {
		t.Skipf("cannot become a child subreaper: %v", err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	child.Env = append(os.Environ(), crashEnv+"="+parent)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatalf("starting the crash child: %v", err)
	}
	kill = append(kill, child)
	line, err := bufio.NewReader(out).ReadString('\n')
	var orphan int
	var dead string
	if n, _ := fmt.Sscanf(line, "ready %d %s", &orphan, &dead); n != 2 {
		t.Fatalf("crash child said %q (%v), want \"ready PID DIR\"", line, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(orphan, syscall.SIGKILL)
		_, _ = syscall.Wait4(orphan, nil, 0, nil)
	})
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if got := cgroupOf(t, orphan); got != filepath.Join(dead, "peer") {
		t.Fatalf("before recovery the orphan %d is in %s, want the dead run's %s/peer", orphan, got, dead)
	}
	// Not leftovers: a subtree whose owner is alive, and others' directories.
	keep := []string{filepath.Join(parent, fmt.Sprintf("strand-%d", os.Getppid())), filepath.Join(parent, "strand-x1"), filepath.Join(parent, "other-7")}
	for _, d := range keep {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	a, err := Open(ActuatorOptions{Parent: parent, Components: []string{"peer"}})
	if err != nil {
		t.Fatalf("Open after the crash: %v", err)
	}
	defer a.Close()
	if got := a.Leftovers(); !slices.Equal(got, []string{dead}) {
		t.Errorf("Leftovers() = %q, want [%s]", got, dead)
	}
	if exists(dead) {
		t.Errorf("the dead run's %s still exists", dead)
	}
	if got := cgroupOf(t, orphan); got != parent || !alive(orphan) {
		t.Errorf("the orphan %d is in %s (alive %v), want alive in Parent %s", orphan, got, alive(orphan), parent)
	}
	for _, d := range keep {
		if !exists(d) {
			t.Errorf("Open removed %s, which is not a dead run's", d)
		}
	}
}

func prctlSubreaper() error {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.Syscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
}

// TestDetect checks the hierarchy detection and the v2 root search on
// directories laid out like cgroupfs; it needs no root.
func TestDetect(t *testing.T) {
	root := t.TempDir()
	write := func(rel, val string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(val), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("v1/cpu.shares", "1024\n")
	write("v2/cgroup.controllers", "cpu io memory\n")
	write("v2/cgroup.subtree_control", "io cpu\n")
	write("v2/a/cgroup.type", "domain\n")
	write("v2/a/cgroup.controllers", "cpu io\n")
	write("v2/a/cgroup.subtree_control", "io memory\n")
	write("v2/a/b/cgroup.type", "domain\n")
	write("v2/a/b/cgroup.controllers", "io\n")
	for _, c := range []struct {
		dir  string
		v2   bool
		want string
	}{
		{"v1", false, ""},
		{"v2", true, ""},
		{"v2/a", false, `cgroup v2 without the cpu controller for its children (cgroup.subtree_control is "io memory", want it to include cpu: echo +cpu > ` + root + "/v2/a/cgroup.subtree_control)"},
		{"v2/a/b", false, "cgroup v2, but cannot read cgroup.subtree_control"},
		{"v1/cpu.shares", false, "not a directory"},
	} {
		v2, err := detect(filepath.Join(root, c.dir))
		if c.want == "" && (err != nil || v2 != c.v2) || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("detect(%s) = %v, %v; want v2 %v, error containing %q", c.dir, v2, err, c.v2, c.want)
		}
	}
	if got, want := v2Root(filepath.Join(root, "v2/a/b")), filepath.Join(root, "v2"); got != want {
		t.Errorf("v2Root(v2/a/b) = %s, want %s", got, want)
	}
}
