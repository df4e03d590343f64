//go:build linux

package isolation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fakeNet stands in for the peers' /metrics: every scrape of the period
// ending at at returns the committed count the test set for that period.
type fakeNet struct {
	committed atomic.Int64
	scrapes   atomic.Int64 // scrapes that read committed
}

func (f *fakeNet) scrape(_ context.Context, addr string, at time.Time) (Reading, error) {
	if addr == "down:1" {
		return Reading{}, errors.New("connection refused")
	}
	n := float64(f.committed.Load())
	f.scrapes.Add(1)
	return Reading{At: at, Committed: n, Submitted: n}, nil
}

// TestLoop runs the loop against real processes in a real cgroup v1
// hierarchy, with injected ticks and scripted throughput: the processes
// go into their components' cgroups; throughput at the threshold changes
// nothing; half of it raises both shares to 1024·(1+4·0.5) = 3072 in the
// kernel's cpu.shares; a process that is gone at the start is left out,
// and one that exits later is dropped, while the loop carries on for the
// others; and on cancel the shares go back to the
// default, the cgroups are removed and the surviving processes run on in
// the parent cgroup.
func TestLoop(t *testing.T) {
	var kill []*exec.Cmd
	parent := testParent(t, &kill)
	ordererPID, peerPID, silentPID := startSleep(t, &kill), startSleep(t, &kill), startSleep(t, &kill)
	doomed := exec.Command("sleep", "60")
	if err := doomed.Start(); err != nil {
		t.Fatal(err)
	}
	kill = append(kill, doomed)
	gone := exec.Command("true") // exited and reaped before the loop starts
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	a, err := Open(ActuatorOptions{Parent: parent, Components: []string{"orderer", "peer"}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer a.Close()

	var logs bytes.Buffer
	ticks := make(chan time.Time)
	net := &fakeNet{}
	var reports struct {
		sync.Mutex
		r []PeriodReport
	}
	l, err := NewLoop(LoopConfig{
		OnPeriod:   func(p PeriodReport) { reports.Lock(); reports.r = append(reports.r, p); reports.Unlock() },
		Controller: Config{Threshold: 100, Components: []Component{{"orderer", 4}, {"peer", 4}}, HoldShares: true},
		Targets: []Target{
			{Name: "orderer0", Component: "orderer", PID: ordererPID},
			{Name: "peer0", Component: "peer", PID: peerPID, Metrics: "peer0:1"},
			{Name: "peer1", Component: "peer", PID: doomed.Process.Pid, Metrics: "peer1:1"},
			{Name: "peer2", Component: "peer", PID: silentPID, Metrics: "down:1"}, // never answers
			{Name: "peer3", Component: "peer", PID: gone.Process.Pid, Metrics: "peer3:1"},
		},
		Ticks:  ticks,
		Scrape: net.scrape,
		Log:    slog.New(slog.NewTextHandler(&logs, nil)),
	}, a)
	if err != nil {
		t.Fatalf("NewLoop: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	// Stopped before the actuator closes, even when the test fails.
	stop := sync.OnceValue(func() error { cancel(); return <-done })
	defer stop()

	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	// step ends period n with committed transactions at the given count
	// and waits until the loop has handled it.
	step := func(committed int64) LoopMetrics {
		t.Helper()
		net.committed.Store(committed)
		n++
		select {
		case ticks <- start.Add(time.Duration(n) * time.Second):
		case err := <-done:
			t.Fatalf("Run returned early: %v\n%s", err, logs.String())
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if m := l.Metrics(); m.Periods == uint64(n) {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("the loop did not handle period %d within 10 s: %v", n, l.Metrics())
			}
		}
	}
	if m := step(0); m.Exited != 1 || m.Controlled != 4 { // the first reading; no sample yet
		t.Fatalf("with peer3 gone before the start: %v; want it left out and the other 4 controlled", m)
	}
	for _, c := range []struct {
		name string
		pid  int
	}{{"orderer", ordererPID}, {"peer", peerPID}, {"peer", doomed.Process.Pid}} {
		if got, want := cgroupOf(t, c.pid), filepath.Join(a.Dir(), c.name); got != want {
			t.Fatalf("pid %d is in %s, want %s", c.pid, got, want)
		}
	}
	if m := step(100); m.Decisions != 0 || m.Throughput != 100 || m.ScrapeErrors != 2 {
		t.Fatalf("at the threshold: %v; want no decision, 100 tps and one failed scrape per period", m)
	}
	m := step(150) // 50 tps: deficit 0.5
	if m.Decisions != 2 || m.Shares["peer"] != 3072 || m.Shares["orderer"] != 3072 {
		t.Fatalf("at half the threshold: %v; want orderer and peer at 3072", m)
	}
	// Every sampled period was reported, the boost with its two changes
	// and the shares after them; the first period (no sample) was not.
	reports.Lock()
	if len(reports.r) != 2 {
		t.Fatalf("%d periods reported after 3 (the first without a sample), want 2: %+v", len(reports.r), reports.r)
	}
	if r := reports.r[0]; r.Sample.Throughput != 100 || len(r.Changes) != 0 || r.Shares["peer"] != int(DefaultShares) || r.Threshold != 100 || !r.At.Equal(start.Add(2*time.Second)) {
		t.Fatalf("period 2 reported as %+v; want 100 tps, no change, default shares, threshold 100, at its tick", r)
	}
	if r := reports.r[1]; r.Sample.Throughput != 50 || len(r.Changes) != 2 || r.Shares["peer"] != 3072 || r.Shares["orderer"] != 3072 {
		t.Fatalf("period 3 reported as %+v; want 50 tps, two changes, both shares 3072", r)
	}
	reports.r[1].Shares["peer"] = 1 // the caller's copy
	reports.Unlock()
	if m := l.Metrics(); m.Shares["peer"] != 3072 {
		t.Fatalf("a report's shares alias the loop's: %v", m.Shares)
	}
	for _, g := range []string{"orderer", "peer"} {
		if got := readShares(t, filepath.Join(a.Dir(), g)); got != 3072 {
			t.Fatalf("%s's cpu.shares is %d after the boost, want 3072", g, got)
		}
	}

	if err := doomed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	doomed.Wait()
	m = step(250)
	if m.Exited != 2 || m.Controlled != 3 || m.Throughput != 100 {
		t.Fatalf("after peer1 exited: %v; want it dropped and the loop measuring the others", m)
	}
	if c := strings.Count(logs.String(), "level=WARN msg=\"isolation: scrape failed"); c != 1 {
		t.Fatalf("peer2's failing scrapes logged at WARN %d times, want once (then DEBUG):\n%s", c, logs.String())
	}
	if !strings.Contains(logs.String(), "node=peer1") || !strings.Contains(logs.String(), "reason=\"throughput 50.0 tps < threshold 100.0 tps") {
		t.Fatalf("the log lacks peer1's exit or the decision's reason:\n%s", logs.String())
	}

	if err := stop(); err != nil {
		t.Fatalf("Run: %v\n%s", err, logs.String())
	}
	if _, err := os.Stat(a.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Run, %s: %v; want it removed", a.Dir(), err)
	}
	for _, pid := range []int{ordererPID, peerPID, silentPID} {
		if got := cgroupOf(t, pid); got != parent {
			t.Fatalf("after Run, pid %d is in %s, want %s", pid, got, parent)
		}
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("after Run, pid %d: %v; want it running", pid, err)
		}
	}
	if m := l.Metrics(); m.Shares["peer"] != int(DefaultShares) || !strings.Contains(logs.String(), "controller stopping") {
		t.Fatalf("after Run: %v; want the shares back at the default, logged\n%s", m, logs.String())
	}
	// As the loop ended: its samples are the periods reported, and the
	// shares and decisions are the controller's, not the return to the
	// default that followed.
	last := l.LastMetrics()
	reports.Lock()
	defer reports.Unlock()
	if last.Samples != uint64(len(reports.r)) || last.Decisions != 2 || last.Shares["peer"] != 3072 || l.Metrics().Decisions <= last.Decisions {
		t.Fatalf("LastMetrics %v with %d periods reported (final %v); want one sample per report, the boost's 2 decisions and peer at 3072, before the return to the default", last, len(reports.r), l.Metrics())
	}
}

func readShares(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cpu.shares"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if _, err := fmt.Sscan(string(b), &n); err != nil {
		t.Fatalf("%s/cpu.shares holds %q", dir, b)
	}
	return n
}

// TestNewLoopRefuses checks that a loop is not built on targets it cannot
// control or measure, with errors naming the target and what is allowed.
func TestNewLoopRefuses(t *testing.T) {
	var kill []*exec.Cmd
	a, err := Open(ActuatorOptions{Parent: testParent(t, &kill), Components: []string{"orderer", "peer"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cfg := Config{Components: []Component{{"orderer", 4}, {"peer", 4}}}
	for _, tc := range []struct {
		cfg  LoopConfig
		want string
	}{
		{LoopConfig{Controller: cfg, Targets: []Target{{Name: "p", Component: "contract", PID: 1, Metrics: "x:1"}}},
			`Targets[0] (p) has component "contract", want one of the controller's orderer, peer`},
		{LoopConfig{Controller: cfg, Targets: []Target{{Name: "p", Component: "peer", PID: 0, Metrics: "x:1"}}},
			"Targets[0] (p) has PID 0, want a process id > 0"},
		{LoopConfig{Controller: cfg, Targets: []Target{{Name: "o", Component: "orderer", PID: 1}}},
			"none of the 1 LoopConfig.Targets has a metrics address"},
		{LoopConfig{Controller: Config{}, Targets: []Target{{Name: "p", Component: "peer", PID: 1, Metrics: "x:1"}}},
			`no cgroup for component "contract"`},
		{LoopConfig{Controller: cfg, Period: -time.Second, Targets: []Target{{Name: "p", Component: "peer", PID: 1, Metrics: "x:1"}}},
			"LoopConfig.Period is -1s, want > 0"},
		{LoopConfig{Controller: cfg, Probe: time.Second, Targets: []Target{{Name: "p", Component: "peer", PID: 1, Metrics: "x:1"}}},
			"LoopConfig.Probe is 1s, want 0 (no probes) or in (0, 1s)"},
		{LoopConfig{Controller: cfg, Probe: -time.Millisecond, Targets: []Target{{Name: "p", Component: "peer", PID: 1, Metrics: "x:1"}}},
			"LoopConfig.Probe is -1ms"},
		{LoopConfig{Controller: cfg, ProbeTicks: make(chan time.Time), Targets: []Target{{Name: "p", Component: "peer", PID: 1, Metrics: "x:1"}}},
			"LoopConfig.ProbeTicks is set without Ticks"},
	} {
		_, err := NewLoop(tc.cfg, a)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewLoop: %v; want ErrBadConfig saying %q", err, tc.want)
		}
	}
}

// TestLoopUnscraped: when no peer answers its /metrics, the loop still
// reads the kernel's counters of the nodes, and a delay above the target
// raises their share. Here two busy processes per core wait on the run
// queues (the delay target, 1 µs, is below any real wait) and every scrape
// fails.
func TestLoopUnscraped(t *testing.T) {
	var kill []*exec.Cmd
	parent := testParent(t, &kill)
	targets := startBusy(t, &kill, "down:1")
	a, err := Open(ActuatorOptions{Parent: parent, Components: []string{"peer"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ticks := make(chan time.Time)
	net := &fakeNet{}
	l, err := NewLoop(LoopConfig{
		Controller: Config{DelayTarget: time.Microsecond, Threshold: 100, Components: []Component{{"peer", 4}}},
		Targets:    targets, Ticks: ticks, Scrape: net.scrape, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, a)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	// Stopped before the actuator closes, even when the test fails.
	stop := sync.OnceValue(func() error { cancel(); return <-done })
	defer stop()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Tick until a period has seen enough time slices to measure the
	// delay; each tick waits for the busy processes to run a while.
	for l.Metrics().Decisions == 0 {
		now = now.Add(time.Second)
		ticks <- now
		time.Sleep(100 * time.Millisecond)
	}
	m := l.Metrics()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if m.ScrapeErrors == 0 || m.Shares["peer"] <= int(DefaultShares) || m.Delay <= 0 {
		t.Fatalf("every scrape failing, busy processes waiting: %v; want scrape errors, a measured delay and the share raised", m)
	}
}

// TestLoopProbe: between periods, a probe reads the nodes' scheduler
// counters and raises the share at once when they wait longer than the
// target; no period has to end first. Two busy processes per core wait
// on the run queues (the delay target, 1 µs, is below any real wait);
// only probe ticks are sent.
func TestLoopProbe(t *testing.T) {
	var kill []*exec.Cmd
	parent := testParent(t, &kill)
	targets := startBusy(t, &kill, "peer:1")
	a, err := Open(ActuatorOptions{Parent: parent, Components: []string{"peer"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var logs bytes.Buffer
	var logMu sync.Mutex
	ticks, probes := make(chan time.Time), make(chan time.Time)
	reports := make(chan PeriodReport, 1)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l, err := NewLoop(LoopConfig{
		Controller: Config{DelayTarget: time.Microsecond, Threshold: 100, Components: []Component{{"peer", 4}}},
		Targets:    targets, Ticks: ticks, Start: start, ProbeTicks: probes, Scrape: (&fakeNet{}).scrape,
		Log:      slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil)),
		OnPeriod: func(p PeriodReport) { reports <- p },
	}, a)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	stop := sync.OnceValue(func() error { cancel(); return <-done })
	defer stop()
	// Probe until a window has seen enough waiting to measure the delay;
	// each probe waits for the busy processes to run a while.
	for n := 0; l.Metrics().Decisions == 0; n++ {
		if n == 100 {
			t.Fatalf("no decision after %d probes of busy processes: %v", n, l.Metrics())
		}
		time.Sleep(100 * time.Millisecond)
		select {
		case probes <- start:
		case err := <-done:
			t.Fatalf("Run returned early: %v", err)
		}
	}
	m := l.Metrics()
	if m.Periods != 0 || m.Shares["peer"] <= int(DefaultShares) {
		t.Fatalf("after probes only: %v; want no period and the peer's share raised", m)
	}
	if got := readShares(t, filepath.Join(a.Dir(), "peer")); got != m.Shares["peer"] {
		t.Fatalf("peer's cpu.shares is %d after the probe, want %d", got, m.Shares["peer"])
	}
	// The next period's report carries the probes' changes first.
	ticks <- start.Add(time.Second)
	r := <-reports
	if len(r.Changes) == 0 || !strings.HasPrefix(r.Changes[0].Reason, "probe: delay") || r.Changes[0].From != DefaultShares {
		t.Fatalf("the period after the probes reported changes %v; want the probe's raise from %d first", r.Changes, DefaultShares)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "reason=\"probe: delay") {
		t.Fatalf("the probe's decision is not logged with its reason:\n%s", logs.String())
	}
}

// lockedWriter serialises writes to w (the loop logs from its goroutine
// while the test reads).
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestLoopStart checks the first reading at Start: the first tick already
// ends a sampled period (without it, the first sample came a period
// later), and the boost it decides is in the kernel's cpu.shares.
func TestLoopStart(t *testing.T) {
	var kill []*exec.Cmd
	parent := testParent(t, &kill)
	a, err := Open(ActuatorOptions{Parent: parent, Components: []string{"peer"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ticks := make(chan time.Time)
	net := &fakeNet{}
	l, err := NewLoop(LoopConfig{
		Controller: Config{Threshold: 100, Components: []Component{{"peer", 4}}},
		Targets:    []Target{{Name: "peer0", Component: "peer", PID: startSleep(t, &kill), Metrics: "peer0:1"}},
		Ticks:      ticks, Start: start, Scrape: net.scrape, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, a)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	stop := sync.OnceValue(func() error { cancel(); return <-done })
	defer stop()
	for deadline := time.Now().Add(10 * time.Second); net.scrapes.Load() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the loop took no first reading within 10 s")
		}
	}
	net.committed.Store(50) // 50 tps over the first second: deficit 0.5
	ticks <- start.Add(time.Second)
	for deadline := time.Now().Add(10 * time.Second); l.Metrics().Periods < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the loop did not handle its first period within 10 s: %v", l.Metrics())
		}
	}
	m := l.Metrics()
	if m.Samples != 1 || m.Throughput != 50 || m.Shares["peer"] != 3072 {
		t.Fatalf("after the first tick: %v; want one sample of 50 tps and the peer at 3072", m)
	}
	if got := readShares(t, filepath.Join(a.Dir(), "peer")); got != 3072 {
		t.Fatalf("peer's cpu.shares is %d after the first tick, want 3072", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// startBusy starts two busy processes per core, each killed through kill
// when the test ends, and returns them as peer targets whose metrics are
// scraped at metrics.
func startBusy(t *testing.T, kill *[]*exec.Cmd, metrics string) []Target {
	t.Helper()
	var targets []Target
	for i := range 2 * runtime.NumCPU() {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		*kill = append(*kill, c)
		targets = append(targets, Target{Name: fmt.Sprintf("busy%d", i), Component: "peer", PID: c.Process.Pid, Metrics: metrics})
	}
	return targets
}
