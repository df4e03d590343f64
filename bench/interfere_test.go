//go:build linux

package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strand-ledger/strand/isolation"
)

// TestHogMain: the hog counts its work and answers each line with the
// count so far; it returns when its input ends.
func TestHogMain(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- HogMain(inR, outW); outW.Close() }()
	answers := bufio.NewScanner(outR)
	ask := func() uint64 {
		t.Helper()
		if _, err := io.WriteString(inW, "\n"); err != nil {
			t.Fatal(err)
		}
		if !answers.Scan() {
			t.Fatalf("no answer: %v", answers.Err())
		}
		n, err := strconv.ParseUint(answers.Text(), 10, 64)
		if err != nil {
			t.Fatalf("answer %q: %v", answers.Text(), err)
		}
		return n
	}
	first := ask()
	for ask() <= first { // the count grows; wait for it without a deadline of our own
		time.Sleep(time.Millisecond)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("HogMain after its input ended: %v", err)
	}
}

// testBinEnv hands the strand binary to a child test process.
const testBinEnv = "STRAND_BENCH_TEST_BIN"

// binDir holds the strand binary strandBinary builds; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// strandBinary builds the strand command once for the tests that start
// node processes and hogs.
var strandBinary = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv(testBinEnv); bin != "" {
		return bin, nil // a child of this test binary: the parent built it
	}
	dir, err := os.MkdirTemp("", "strand-bench-test-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "strand")
	// Built as .ci/run's smoke runs and deploy/image.sh build it (static,
	// -trimpath), so that in CI every package is already compiled and
	// this only links.
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/strand-ledger/strand/cmd/strand")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// cgroupTestParent makes a fresh cgroup v1 cpu directory for one test and
// removes it at the end; it skips the test where that is impossible.
func cgroupTestParent(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to make cgroups (euid %d)", os.Geteuid())
	}
	if _, err := isolation.RemoveDead("/sys/fs/cgroup/cpu", "strand-test-bench"); err != nil {
		t.Skipf("cgroup v1 cpu hierarchy not usable: %v", err)
	}
	p := filepath.Join("/sys/fs/cgroup/cpu", fmt.Sprintf("strand-test-bench-%d", os.Getpid()))
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Skipf("cgroup v1 cpu hierarchy not writable: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Rmdir(p); err != nil {
			ents, _ := os.ReadDir(p)
			var names []string
			for _, e := range ents {
				if e.IsDir() {
					names = append(names, e.Name())
				}
			}
			t.Errorf("cleanup: rmdir %s: %v (cgroups left: %v)", p, err, names)
		}
	})
	return p
}

// processRoundEnv skips a test that starts node processes under -short,
// and returns its cgroup parent and the strand binary.
func processRoundEnv(t *testing.T) (parent, bin string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts node processes")
	}
	parent = cgroupTestParent(t)
	bin, err := strandBinary()
	if err != nil {
		t.Fatal(err)
	}
	return parent, bin
}

// TestProcessRound runs a real round on node processes with two hogs,
// a CPU quota on the peers and a controller told to act (a delay target
// of 1 µs and an unreachable threshold): the nodes and the hogs sit in
// their cgroups under the round's one, the quota is in the kernel, the
// hogs' work and the nodes' scheduling are reported, the controller
// raised the shares; and when the round ends every cgroup it made is
// gone (and a dead run's idle hogs' cgroups it found), and so are the
// hogs and the nodes.
func TestProcessRound(t *testing.T) {
	parent, bin := processRoundEnv(t)
	r := Round{Label: "procs", Workload: "smallbank", Params: map[string]string{"accounts": "100"}, Clients: 4, Duration: 3 * time.Second,
		Interference: Interference{Network: "processes", Hogs: 2, HogsStop: 2 * time.Second, CPUQuota: map[string]float64{"peer": 1.5},
			CgroupParent: parent, Isolation: &IsolationConfig{K: 4, DelayTarget: time.Microsecond, Threshold: 1e6, Period: 200 * time.Millisecond}}}
	net := filepath.Join(parent, fmt.Sprintf("strand-bench-%d", os.Getpid()), "net")
	// What a harness killed during a round with idle hogs leaves beside
	// the rounds' cgroups: a dead PID's subtree with a hog's cgroup. Any
	// round removes it at its start (checked with the rest below).
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(parent, fmt.Sprintf("strand-hogs-%d", dead.Process.Pid), "hog0"), 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	quotas, pids := map[string]string{}, map[int]bool{}
	seen := func(_ Progress) {
		mu.Lock()
		defer mu.Unlock()
		_ = filepath.WalkDir(net, func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if b, err := os.ReadFile(filepath.Join(path, "cgroup.procs")); err == nil {
				for _, f := range strings.Fields(string(b)) {
					pid, _ := strconv.Atoi(f)
					pids[pid] = true
				}
			}
			if strings.HasPrefix(filepath.Base(path), "peer") {
				b, _ := os.ReadFile(filepath.Join(path, "cpu.cfs_quota_us"))
				quotas[filepath.Base(path)] = strings.TrimSpace(string(b))
			}
			return nil
		})
	}
	res, err := Run(context.Background(), r, Target{Command: []string{bin}, Progress: seen})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	iso := res.Isolation
	if iso == nil || iso.Hogs != 2 || !(iso.HogOpsPerS > 0) || !(iso.HogWindowS > 0) || len(iso.Nodes) != 3 || iso.Controller == nil {
		t.Fatalf("isolation figures %+v", iso)
	}
	for _, n := range iso.Nodes {
		if !(n.CPUPercent > 0) {
			t.Errorf("node %s: no CPU time measured: %+v", n.Name, n)
		}
		want := 0.0
		if strings.HasPrefix(n.Name, "peer") {
			want = 1.5
		}
		if n.QuotaCores != want || n.ThrottledPct < 0 || n.ThrottledPct > 100 {
			t.Errorf("node %s: quota %g cores, throttled in %g%% of its periods; want %g cores (cpu_quota of its kind), 0 to 100%%", n.Name, n.QuotaCores, n.ThrottledPct, want)
		}
	}
	if c := iso.Controller; c.Samples == 0 || c.Decisions == 0 || c.MaxShares <= 1024 {
		t.Errorf("controller %+v: want samples, decisions and a share above 1024", c)
	}
	// Its periods during the load, in order, each with every component's
	// share; with a 1 µs delay target and an unreachable threshold it
	// raised some share above the default in one of them, saying why.
	ps, prev, raised := iso.Controller.Periods, -1.0, false
	if len(ps) == 0 || uint64(len(ps)) > iso.Controller.Samples {
		t.Errorf("%d controller periods recorded for %d samples, want 1 to %d", len(ps), iso.Controller.Samples, iso.Controller.Samples)
	}
	for _, p := range ps {
		if p.T <= prev || p.T > res.ElapsedS+1 || len(p.Shares) == 0 {
			t.Errorf("controller period %+v after t=%v (the load lasted %v s)", p, prev, res.ElapsedS)
		}
		prev = p.T
		for _, sh := range p.Shares {
			raised = raised || (sh > 1024 && (len(p.Changes) > 0 || p.T > ps[0].T))
		}
	}
	if !raised || !slices.ContainsFunc(ps, func(p ControllerPeriod) bool { return len(p.Changes) > 0 && strings.Contains(p.Changes[0], "→") }) {
		t.Errorf("no period raised a share with its reason: %+v", ps)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(quotas) != 2 || quotas["peer0-org1"] != "150000" || quotas["peer0-org2"] != "150000" {
		t.Errorf("peers' cpu.cfs_quota_us during the round: %v, want 150000 (1.5 cores of 100 ms) for both", quotas)
	}
	if len(pids) < 5 {
		t.Errorf("processes seen in the round's cgroups: %d, want the 3 nodes and 2 hogs", len(pids))
	}
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		if e.IsDir() {
			t.Errorf("after the round, %s is left in %s", e.Name(), parent)
		}
	}
	for pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("after the round, pid %d (a node or a hog) still runs", pid)
		}
	}
}

// TestIdleHogsAtTop runs a round with idle hogs: their subtree is a
// sibling of the round's own cgroup, directly under the cgroup parent,
// and marked idle, so that cpu.idle ranks them below everything else on
// the machine (the load generator and the kernel's workers included), not
// only below the nodes; and it is gone when the round ends.
func TestIdleHogsAtTop(t *testing.T) {
	parent, bin := processRoundEnv(t)
	r := Round{Label: "idle-hogs", Workload: "smallbank", Params: map[string]string{"accounts": "100"}, Clients: 2, Duration: time.Second,
		Interference: Interference{Network: "processes", Hogs: 1, HogsIdle: true, CgroupParent: parent}}
	hogDir := filepath.Join(parent, fmt.Sprintf("strand-hogs-%d", os.Getpid()))
	var mu sync.Mutex
	var idle, procs string
	seen := func(_ Progress) {
		mu.Lock()
		defer mu.Unlock()
		if b, err := os.ReadFile(filepath.Join(hogDir, "cpu.idle")); err == nil {
			idle = strings.TrimSpace(string(b))
		}
		if b, err := os.ReadFile(filepath.Join(hogDir, "hog0", "cgroup.procs")); err == nil && procs == "" {
			procs = strings.TrimSpace(string(b))
		}
	}
	if _, err := Run(context.Background(), r, Target{Command: []string{bin}, Progress: seen}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if idle != "1" || procs == "" {
		t.Errorf("during the round %s had cpu.idle %q and its hog0 the processes %q; want 1 and the hog", hogDir, idle, procs)
	}
	if _, err := os.Stat(hogDir); !os.IsNotExist(err) {
		t.Errorf("after the round %s: %v, want it removed", hogDir, err)
	}
}

const killedRoundEnv = "STRAND_BENCH_KILLED_ROUND" // the cgroup parent

// TestKilledRoundChild is the harness TestKilledRound kills: it does
// nothing unless started by it, and then runs a long round with hogs.
func TestKilledRoundChild(t *testing.T) {
	parent := os.Getenv(killedRoundEnv)
	if parent == "" {
		return
	}
	bin, err := strandBinary()
	if err != nil {
		t.Fatal(err)
	}
	r := Round{Label: "killed", Workload: "smallbank", Params: map[string]string{"accounts": "100"}, Clients: 2, Duration: 10 * time.Minute,
		Interference: Interference{Network: "processes", Hogs: 2, CgroupParent: parent, Isolation: &IsolationConfig{K: 4}}}
	Run(context.Background(), r, Target{Command: []string{bin}})
}

// TestKilledRound kills a harness with SIGKILL in the middle of a round
// with hogs and a controller: its nodes and hogs die with it, its cgroups
// stay, and the next round's start removes them, saying so.
func TestKilledRound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	parent := cgroupTestParent(t)
	bin, err := strandBinary() // built here: the child is killed before any cleanup of its own
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run", "^TestKilledRoundChild$", "-test.v")
	child.Env = append(os.Environ(), killedRoundEnv+"="+parent, testBinEnv+"="+bin)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	dir := filepath.Join(parent, fmt.Sprintf("strand-bench-%d", child.Process.Pid))
	var pids []int
	for len(pids) < 5 { // 3 nodes and 2 hogs in the round's cgroups
		if child.ProcessState != nil {
			t.Fatal("the harness exited before its round started")
		}
		time.Sleep(100 * time.Millisecond)
		pids = pids[:0]
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == "cgroup.procs" {
				b, _ := os.ReadFile(path)
				for _, f := range strings.Fields(string(b)) {
					pid, _ := strconv.Atoi(f)
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil { // a node dies by PDEATHSIG, a hog at its stdin's end
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the killed harness's cgroups: %v; want them still there for the next start to remove", err)
	}
	in, err := openRoundCgroup(parent)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(in.Leftovers(), dir) {
		t.Fatalf("the next start removed %v, want %s among them", in.Leftovers(), dir)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("after the next start, %s: %v; want it removed", dir, err)
	}
}

// TestRoundRefusesNoCgroup: a round whose cgroup_parent is no cgroup is
// refused with the reason, after its network started, and leaves no node
// running.
func TestRoundRefusesNoCgroup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin, err := strandBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := Round{Label: "nocg", Workload: "smallbank", Params: map[string]string{"accounts": "10"}, Clients: 2, Duration: time.Second,
		Interference: Interference{Network: "processes", Hogs: 1, CgroupParent: dir}}
	var pids []int
	_, err = Run(context.Background(), r, Target{Command: []string{bin}, Log: func(f string, _ ...any) {
		if strings.HasPrefix(f, "network up") {
			pids = nodePIDs(t)
		}
	}})
	for _, want := range []string{`round "nocg"`, "need a writable cgroup hierarchy", dir, "neither cpu.shares"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Run with cgroup_parent %s: %v; want an error saying %q", dir, err, want)
		}
	}
	if len(pids) != 3 {
		t.Fatalf("node processes seen once the network was up: %v, want the orderer and two peers", pids)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("node pid %d still runs after the refused round", pid)
		}
	}
}

// nodePIDs lists the running processes started as "strand <role> start",
// children of this test binary.
func nodePIDs(t *testing.T) []int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 2 && f[1] == strconv.Itoa(os.Getpid()) && strings.Contains(string(cmd), "start\x00--config") {
			out = append(out, pid)
		}
	}
	return out
}
