//go:build linux

package isolation

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSubtreeWeight: the subtree weighs the sum of its components, at the
// defaults and after a change, so that raising a component raises it
// against a neighbour beside the subtree.
func TestSubtreeWeight(t *testing.T) {
	var kill []*exec.Cmd
	parent := testParent(t, &kill)
	a, err := Open(ActuatorOptions{Parent: parent, Components: []string{"orderer", "peer", "peer2"}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer a.Close()
	check := func(want int) {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(a.Dir(), "cpu.shares"))
		if err != nil || strings.TrimSpace(string(raw)) != strconv.Itoa(want) {
			t.Fatalf("subtree cpu.shares %q (%v), want %d", raw, err, want)
		}
	}
	check(3 * 1024)
	if err := a.Set("peer", 5000); err != nil {
		t.Fatal(err)
	}
	check(1024 + 5000 + 1024)
	if err := a.Set("peer", DefaultShares); err != nil {
		t.Fatal(err)
	}
	check(3 * 1024)
}

// TestQuota sets a real CFS quota, reads it back, sees the kernel
// throttle a busy process held to it, and removes it.
func TestQuota(t *testing.T) {
	var kill []*exec.Cmd
	parent := testParent(t, &kill)
	a, err := Open(ActuatorOptions{Parent: parent, Components: []string{"peer"}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer a.Close()
	if err := a.SetQuota("peer", 0.05); err != nil {
		t.Fatalf("SetQuota: %v", err)
	}
	raw, _ := os.ReadFile(filepath.Join(a.Dir(), "peer", "cpu.cfs_quota_us"))
	if got := strings.TrimSpace(string(raw)); got != "5000" {
		t.Fatalf("cpu.cfs_quota_us %q after a quota of 0.05 cores over the default 100ms period, want 5000", got)
	}
	if q, err := a.Quota("peer"); err != nil || math.Abs(q-0.05) > 1e-9 {
		t.Fatalf("Quota = %v, %v; want 0.05", q, err)
	}
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	kill = append(kill, busy)
	if err := a.Move("peer", busy.Process.Pid); err != nil {
		t.Fatal(err)
	}
	// A busy process wants a whole core; held to 5% it is throttled in
	// nearly every period. Wait for the kernel to say so.
	for deadline := time.Now().Add(20 * time.Second); throttled(t, a) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a busy process under a 0.05-core quota was never throttled (cpu.stat nr_throttled stays 0)")
		}
	}
	if err := a.SetQuota("peer", 0); err != nil {
		t.Fatal(err)
	}
	if q, err := a.Quota("peer"); err != nil || q != 0 {
		t.Fatalf("Quota after removing it = %v, %v; want 0", q, err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if exists(a.Dir()) {
		t.Fatalf("%s still exists after Close", a.Dir())
	}
}

func throttled(t *testing.T, a *Actuator) uint64 {
	t.Helper()
	g, _ := a.Group("peer")
	th, err := ReadThrottle(g)
	if err != nil {
		t.Fatal(err)
	}
	if th.Throttled > th.Periods {
		t.Fatalf("ReadThrottle = %+v: more periods throttled than run", th)
	}
	return th.Throttled
}

// TestReadThrottleRefused: a cpu.stat without the bandwidth counters, or
// with a count that is not one, is an error naming the file.
func TestReadThrottleRefused(t *testing.T) {
	for _, body := range []string{"usage_usec 10\n", "nr_periods 4\nnr_throttled x\n"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "cpu.stat"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadThrottle(dir); err == nil || !strings.Contains(err.Error(), "cpu.stat") {
			t.Errorf("ReadThrottle of %q = %v, want an error naming cpu.stat", body, err)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cpu.stat"), []byte("nr_periods 40\nnr_throttled 31\nthrottled_time 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if th, err := ReadThrottle(dir); err != nil || th != (Throttle{Periods: 40, Throttled: 31}) {
		t.Errorf("ReadThrottle = %+v, %v; want 40 periods, 31 throttled", th, err)
	}
}

func TestCheckQuota(t *testing.T) {
	for _, c := range []float64{-1, 0.001, math.NaN(), math.Inf(1), 2000} {
		err := CheckQuota("cpu_quota.peer", c)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "cpu_quota.peer") {
			t.Errorf("CheckQuota(%v) = %v, want ErrBadConfig naming cpu_quota.peer", c, err)
		}
	}
	for _, c := range []float64{0, 0.01, 1.5, 1024} {
		if err := CheckQuota("q", c); err != nil {
			t.Errorf("CheckQuota(%v) = %v, want nil", c, err)
		}
	}
}

// TestRemoveDead removes the cgroups named PREFIX-PID[-SUFFIX] of dead
// processes, with the cgroups below them, and leaves a live one's and
// other names alone.
func TestRemoveDead(t *testing.T) {
	var kill []*exec.Cmd
	parent := testParent(t, &kill)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(parent, "x-"+strconv.Itoa(gone.Process.Pid)+"-3")
	live := filepath.Join(parent, "x-"+strconv.Itoa(os.Getppid()))
	other := filepath.Join(parent, "y-"+strconv.Itoa(gone.Process.Pid))
	for _, d := range []string{dead, filepath.Join(dead, "peer"), live, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := RemoveDead(parent, "x")
	if err != nil || len(removed) != 1 || removed[0] != dead {
		t.Fatalf("RemoveDead = %v, %v; want [%s]", removed, err, dead)
	}
	if exists(dead) || !exists(live) || !exists(other) {
		t.Fatalf("after RemoveDead: dead %v, live %v, other %v; want only the dead one gone", exists(dead), exists(live), exists(other))
	}
	for _, d := range []string{live, other} {
		if err := syscall.Rmdir(d); err != nil {
			t.Fatal(err)
		}
	}
}
