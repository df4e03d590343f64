package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
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
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

const cgroupV1CPU = "/sys/fs/cgroup/cpu"

// TestNetIsolate attaches `strand isolate` to a running network of real
// processes with a real cgroup v1 hierarchy: every node moves into its
// component's cgroup, a load far below the (unreachable) threshold raises
// the peers' cpu.shares in the kernel and shows in strand_isolation_*, a
// peer SIGKILLed meanwhile is dropped while the loop carries on, and on
// cancel the cgroups are gone while the nodes run on, back in the
// parent cgroup, and still commit.
func TestNetIsolate(t *testing.T) { testNetIsolate(t, false) }

// TestNetUpIsolation does the same through `strand net up --isolation`,
// which starts the nodes and then stays in the foreground controlling
// them.
func TestNetUpIsolation(t *testing.T) { testNetIsolate(t, true) }

func testNetIsolate(t *testing.T, viaNetUp bool) {
	if testing.Short() {
		t.Skip("starts a network of processes")
	}
	parent := isolateTestParent(t)
	dir := filepath.Join(t.TempDir(), "net")
	lay, err := localnet.Generate(dir, localnet.Spec{Orgs: 1, PeersPerOrg: 2, Batch: node.BatchConfig{MaxTxs: 100, Timeout: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli(t, "net", "down", "--dir", dir) })
	args := []string{"isolate", "--net", dir}
	if viaNetUp {
		args = []string{"net", "up", "--dir", dir, "--isolation"}
	} else {
		mustCLI(t, "net", "up", "--dir", dir)
	}
	metrics := freeAddr(t)
	prefix := map[bool]string{false: "--", true: "--isolation-"}[viaNetUp]
	for _, kv := range [][2]string{{"cgroup-parent", parent}, {"threshold", "1000000"}, {"delay-target", "0"}, {"period", "200ms"}, {"metrics", metrics}} {
		args = append(args, prefix+kv[0], kv[1])
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, done, stop := startCmd(t, ctx, args...)
	sub := filepath.Join(parent, fmt.Sprintf("strand-%d", os.Getpid()))
	pids := map[string]int{}
	for _, n := range lay.Nodes {
		want := filepath.Join(sub, n.Role.String())
		awaitCond(t, done, 30*time.Second, fmt.Sprintf("%s in %s", n.Name, want), func() bool {
			b, err := os.ReadFile(lay.PIDFile(n.Name))
			pids[n.Name], _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil && cpuCgroupOf(pids[n.Name]) == want
		})
	}

	// Load until the controller reacts: every busy period is far below
	// the threshold, so the first one boosts the peers (no delay target:
	// nothing competes with the nodes here).
	c := netConnect(t, lay, "Org1", "")
	loadCtx, endLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer endLoad()
	for w := range 4 {
		wg.Go(func() {
			for i := 0; loadCtx.Err() == nil; i++ {
				c.Contract("kv").Submit(loadCtx, "insert", fmt.Sprintf("w%d-%d", w, i), "v")
			}
		})
	}
	awaitCond(t, done, 30*time.Second, "the peer cgroup's cpu.shares above 1024", func() bool {
		b, err := os.ReadFile(filepath.Join(sub, "peer", "cpu.shares"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && n > 1024
	})
	endLoad()
	wg.Wait()
	// The controller's own metrics show the boost and what it measured.
	got := scrapeGauges(metrics, "strand_isolation_decisions_total", "strand_isolation_samples_total", "strand_isolation_throughput")
	if got["strand_isolation_decisions_total"] == "" || got["strand_isolation_decisions_total"] == "0" || got["strand_isolation_throughput"] == "" {
		t.Fatalf("isolate's /metrics at %s: %v; want decisions > 0 and a throughput", metrics, got)
	}

	// A peer that exits is dropped; the loop carries on with the others.
	// The load went to the first peer (Layout.Peer); the last one dies.
	victim := lay.Nodes[len(lay.Nodes)-1]
	if first, _ := lay.Peer("Org1"); victim.Name == first.Name || victim.Role.String() != "peer" {
		t.Fatalf("want the layout's last node to be a second peer, got %s (%s)", victim.Name, victim.Role)
	}
	if err := syscall.Kill(pids[victim.Name], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	netWaitGone(t, pids[victim.Name])
	awaitCond(t, done, 10*time.Second, victim.Name+" dropped (strand_isolation_exited 1, controlled 2)", func() bool {
		g := scrapeGauges(metrics, "strand_isolation_exited_total", "strand_isolation_controlled", "strand_isolation_periods_total")
		return g["strand_isolation_exited_total"] == "1" && g["strand_isolation_controlled"] == "2"
	})
	delete(pids, victim.Name)

	stop()
	if err := <-done; err != nil {
		t.Fatalf("strand isolate: %v\n%s", err, out.String())
	}
	t.Logf("strand isolate:\n%s", out.String())
	if !strings.Contains(out.String(), "share changed") || !strings.Contains(out.String(), "threshold 1000000.0 tps") {
		t.Fatalf("the log lacks a share change with its reason:\n%s", out.String())
	}
	if _, err := os.Stat(sub); !os.IsNotExist(err) {
		t.Fatalf("after isolate stopped, %s: %v; want it removed", sub, err)
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("after isolate stopped, %s (pid %d): %v; want it running", name, pid, err)
		}
		if got := cpuCgroupOf(pid); got != parent {
			t.Fatalf("after isolate stopped, %s is in %s, want %s", name, got, parent)
		}
	}
	if _, err := c.Contract("kv").Submit(ctx, "insert", "after", "v"); err != nil {
		t.Fatalf("the network does not commit after isolate stopped: %v", err)
	}
}

// freeAddr returns a 127.0.0.1 address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	return lis.Addr().String()
}

// TestIsolateBadInput checks the errors that come before any cgroup is
// touched: they name the flag or the directory and what is wanted.
func TestIsolateBadInput(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"isolate", "--net", empty}, "no network in " + empty + ": run `strand net up --dir " + empty + "` first"},
		{[]string{"isolate", "--net", empty, "--period", "0s"}, "--period is 0s, want > 0"},
		{[]string{"isolate", "--net", empty, "--k", "200"}, "Config.Components[0].K (orderer) is 200, want in [0, 100] (flags --k"},
		{[]string{"isolate", "--net", empty, "--threshold", "-1"}, "Config.Threshold is -1 tps, want a finite number ≥ 0"},
		{[]string{"isolate", "--net", empty, "--delay-target", "-1ms"}, "Config.DelayTarget is -1ms, want 0 (none) or in (0, 1s] (flags"},
		{[]string{"net", "up", "--dir", empty, "--isolation", "--isolation-period", "-1s"}, "--isolation-period is -1s, want > 0"},
		{[]string{"isolate", "--net", empty, "--probe", "1s"}, "--probe is 1s, want 0 (no probes) or more than 0 and less than --period (1s)"},
		{[]string{"isolate", "--net", empty, "--probe", "100ms", "--delay-target", "0"}, "--probe is 100ms, want it only with a --delay-target"},
		{[]string{"net", "up", "--dir", empty, "--isolation", "--isolation-probe", "-1ms"}, "--isolation-probe is -1ms, want 0 (no probes) or more than 0 and less than --isolation-period (1s)"},
		{[]string{"net", "up", "--dir", empty, "--isolation", "--isolation-k", "-1"}, "K (orderer) is -1, want in [0, 100] (flags --isolation-k"},
	} {
		out, err := cli(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("strand %s: %v; want an error saying %q\n%s", strings.Join(tc.args, " "), err, tc.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(empty, localnet.LayoutFile)); !os.IsNotExist(err) {
		t.Errorf("net up --isolation with bad flags generated a network in %s (%v); want nothing touched", empty, err)
	}
}

// awaitCond polls cond until it holds, failing after within or when the
// command returned.
// startCmd runs strand args in this process until stop or ctx's end. Its
// output goes to out, to be read once done has answered. A failing test
// stops it and waits for it to return (isolate then removes its cgroups)
// before the cleanups registered earlier (net down, the parent cgroup).
func startCmd(t *testing.T, ctx context.Context, args ...string) (out *bytes.Buffer, done <-chan error, stop context.CancelFunc) {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	out = new(bytes.Buffer)
	result, exited := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(exited)
		cmd := rootCmd()
		cmd.SetOut(out)
		cmd.SetErr(out)
		cmd.SetArgs(args)
		result <- cmd.ExecuteContext(runCtx)
	}()
	t.Cleanup(func() { stop(); <-exited })
	return out, result, stop
}

func awaitCond(t *testing.T, done <-chan error, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("strand isolate returned (%v) before %s", err, what)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s", what, within)
		}
	}
}

// isolateTestParent makes a cgroup v1 cpu directory for the test to hand
// to --cgroup-parent, and removes it at the end (after net down, which
// runs first: cleanups run last-registered first). It skips the test when
// not root or without a writable cgroup v1 cpu hierarchy.
func isolateTestParent(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("strand isolate needs root (euid is %d)", os.Geteuid())
	}
	if _, err := os.Stat(filepath.Join(cgroupV1CPU, "cpu.shares")); err != nil {
		t.Skipf("strand isolate's test needs the cgroup v1 cpu controller at %s: %v", cgroupV1CPU, err)
	}
	// A test binary killed before its cleanup left its directory behind.
	if _, err := isolation.RemoveDead(cgroupV1CPU, "strand-isotest"); err != nil {
		t.Fatalf("removing the cgroups of killed test runs: %v", err)
	}
	p := filepath.Join(cgroupV1CPU, fmt.Sprintf("strand-isotest-%d", os.Getpid()))
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Skipf("cgroup v1 cpu hierarchy not writable: %v", err)
	}
	t.Cleanup(func() {
		// A run that failed midway may have left its subtree, and the
		// nodes net down stopped may still be leaving it.
		if err := isolation.RemoveTree(cgroupV1CPU, p); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return p
}

// cpuCgroupOf returns pid's directory in the v1 cpu hierarchy, "" if it
// cannot be read.
func cpuCgroupOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), "cpu") {
			return filepath.Join(cgroupV1CPU, f[2])
		}
	}
	return ""
}

// TestNetIsolateCrash kills `strand isolate` (a process of this test
// binary standing in for strand) with SIGKILL while it controls a real
// network: its cgroups stay behind with the nodes in them, the nodes keep
// running, and the next `strand isolate` removes the leftover, says so,
// and takes the nodes over.
func TestNetIsolateCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network of processes")
	}
	parent := isolateTestParent(t)
	dir := filepath.Join(t.TempDir(), "net")
	lay, err := localnet.Generate(dir, localnet.Spec{Orgs: 1, Batch: node.BatchConfig{MaxTxs: 100, Timeout: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli(t, "net", "down", "--dir", dir) })
	mustCLI(t, "net", "up", "--dir", dir)
	pids := readPIDs(t, lay)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var crashedOut bytes.Buffer
	crashed := exec.Command(exe, "isolate", "--net", dir, "--cgroup-parent", parent, "--period", "200ms")
	crashed.Stdout, crashed.Stderr = &crashedOut, &crashedOut
	if err := crashed.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crashed.Process.Kill(); crashed.Wait() })
	leftover := filepath.Join(parent, fmt.Sprintf("strand-%d", crashed.Process.Pid))
	never := make(chan error)
	for _, n := range lay.Nodes {
		want := filepath.Join(leftover, n.Role.String())
		awaitCond(t, never, 30*time.Second, fmt.Sprintf("%s (pid %d) in %s", n.Name, pids[n.Name], want), func() bool {
			return cpuCgroupOf(pids[n.Name]) == want
		})
	}
	if err := crashed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	crashed.Wait()
	for _, n := range lay.Nodes {
		want := filepath.Join(leftover, n.Role.String())
		if got := cpuCgroupOf(pids[n.Name]); got != want || syscall.Kill(pids[n.Name], 0) != nil {
			t.Fatalf("after the crash, %s is in %q, want it running, left in %s", n.Name, got, want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, done, stop := startCmd(t, ctx, "isolate", "--net", dir, "--cgroup-parent", parent, "--period", "200ms")
	sub := filepath.Join(parent, fmt.Sprintf("strand-%d", os.Getpid()))
	for _, n := range lay.Nodes {
		want := filepath.Join(sub, n.Role.String())
		awaitCond(t, done, 30*time.Second, fmt.Sprintf("%s taken over into %s", n.Name, want), func() bool {
			return cpuCgroupOf(pids[n.Name]) == want
		})
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("after the next isolate started, %s: %v; want the leftover removed", leftover, err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("strand isolate: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "removed the cgroups of a run that died") || !strings.Contains(out.String(), leftover) {
		t.Fatalf("the next isolate does not say it removed %s:\n%s", leftover, out.String())
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil || cpuCgroupOf(pid) != parent {
			t.Fatalf("at the end, %s (pid %d): %v, in %s; want it running in %s", name, pid, err, cpuCgroupOf(pid), parent)
		}
	}
}
