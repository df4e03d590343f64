package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/isolation"
	"github.com/strand-ledger/strand/localnet"
)

// interfering is a round's cgroups, hogs and controller while it runs.
// Its order of events, which the figures depend on:
//
//  1. start (after the workload's setup): the round's cgroup,
//     Parent/strand-bench-PID/net, is made at the default weight; in it
//     the nodes go into a cgroup each (the controller's actuator,
//     net/strand-PID/NODE), their quotas are set, the controller loop
//     starts, and then the hogs start, each in its own cgroup
//     (net/strand-hogs-PID/hogN). This is Docker's layout, every
//     container a cgroup under /docker, which QiOi ran in: nodes and hogs
//     compete as siblings, while the load generator, outside, competes
//     with the round's cgroup as a whole and is not starved by the hogs
//     (it would otherwise be part of what the controller cannot help);
//  2. begin (as the load starts): the hogs' counts and the nodes'
//     scheduler counters are read;
//  3. at HogsStop, if set, the hogs' counts are read and the hogs end;
//     the watcher then times the shares' return to the default;
//  4. end (as the load ends): the counts are read again, the hogs end,
//     the loop stops (every share back to the default), and the figures
//     are filled in;
//  5. close (once the outstanding transactions drained, and on any other
//     path): the nodes go back to Parent and the cgroups are removed, so
//     quotas hold through the drain (with a controller, its loop's
//     actuator already did that as the loop stopped).
//
// close undoes whatever start did, on any path; every cgroup made here is
// removed by it, and those of a harness killed before it by the next
// round's Open (isolation/cleanup.go).
type interfering struct {
	r     Round
	nodes []localnet.Proc
	top   *isolation.Actuator // Parent/strand-bench-PID/net
	act   *isolation.Actuator // nil once the loop owns it or it is closed
	loop  *isolation.Loop
	stopL context.CancelFunc
	loopE chan error
	hogs  *hogs

	// Set once by begin, under mu (the watcher and the HogsStop timer
	// read them).
	t0        time.Time
	hogOps0   []uint64
	hogAt0    time.Time
	sched0    map[int]isolation.Schedstat
	throttle0 map[int]isolation.Throttle

	// quotaDirs are the cgroups of the nodes with a CPU quota, by PID.
	quotaDirs map[int]string

	watchStop chan struct{}
	watchDone chan struct{}
	watching  bool

	mu struct {
		sync.Mutex
		hogRate, hogWindow float64 // set when the hogs stop
		hogsStopped        time.Time
		maxShares          int
		defaultAt          time.Time // first time all shares were default after the hogs stopped
		delaySum           float64
		delayN             int
		lastSamples        uint64
		periods            []ControllerPeriod // during the load
		// early are the periods with changes that ended before the load
		// (the hogs start before it): the first period of the load
		// carries their changes (maxEarly at most, the latest).
		early []isolation.PeriodReport
		err   error
	}
}

// maxEarly bounds the periods before the load whose changes are kept.
const maxEarly = 16

// period records one of the controller's periods that ended during the
// load. Those before begin are not the round's, but the shares the load
// starts with come from their changes (the controller answers the hogs
// as they start, before the load): the load's first period lists them
// first, each with its time before the load, so every share in the
// record has its reason.
func (in *interfering) period(p isolation.PeriodReport) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.t0.IsZero() || p.At.Before(in.t0) {
		if len(p.Changes) > 0 {
			if len(in.mu.early) == maxEarly {
				in.mu.early = in.mu.early[1:]
			}
			in.mu.early = append(in.mu.early, p)
		}
		return
	}
	cp := controllerPeriod(p, in.t0)
	if len(in.mu.early) > 0 {
		var early []string
		for _, e := range in.mu.early {
			for _, c := range e.Changes {
				early = append(early, fmt.Sprintf("%.3f s before the load: %s", in.t0.Sub(e.At).Seconds(), c))
			}
		}
		cp.Changes = append(early, cp.Changes...)
		in.mu.early = nil
	}
	in.mu.periods = append(in.mu.periods, cp)
}

// startInterference does step 1 for a round on the process network n;
// command is the strand binary, for the hogs.
func startInterference(r Round, n *Network, command []string, logf func(string, ...any)) (_ *interfering, err error) {
	in := &interfering{r: r, watchStop: make(chan struct{}), watchDone: make(chan struct{}), quotaDirs: map[int]string{}}
	defer func() {
		if err != nil {
			in.close()
			err = fmt.Errorf("bench: round %q: %w", r.Label, err)
		}
	}()
	var comps []string
	var targets []isolation.Target
	for _, p := range localnet.Status(n.Layout) {
		if !p.Alive {
			return in, fmt.Errorf("node %s is not running", p.Name)
		}
		in.nodes = append(in.nodes, p)
		t := isolation.Target{Name: p.Name, Component: componentName(p.Name), PID: p.PID}
		if p.Role == identity.RolePeer {
			t.Metrics = p.Metrics
		}
		comps = append(comps, t.Component)
		targets = append(targets, t)
	}
	if n.mem != nil && n.mem.mem.Hierarchy() == "v2" {
		return in, fmt.Errorf("memory_limit_mb with hogs, isolation or cpu_quota needs cgroup v1: under v2 a process is in one cgroup, and moving the memory nodes into their CPU cgroups would take them out of their memory limit")
	}
	top, err := openRoundCgroup(r.CgroupParent)
	if err != nil {
		return in, fmt.Errorf("hogs, isolation and cpu_quota need a writable cgroup hierarchy (run as root, or set cgroup_parent to a cgroup delegated to you): %w", err)
	}
	in.top = top
	// Idle hogs' subtrees sit beside the rounds' (below); a harness killed
	// during such a round leaves one there.
	deadHogs, err := isolation.RemoveDead(filepath.Dir(top.Dir()), "strand-hogs")
	if err != nil {
		return in, err
	}
	for _, d := range append(top.Leftovers(), deadHogs...) {
		logf("removed the cgroups of a run that died without cleaning up: %s", d)
	}
	net, err := top.Group("net")
	if err != nil {
		return in, err
	}
	act, err := isolation.Open(isolation.ActuatorOptions{Parent: net, Components: comps})
	if err != nil {
		return in, err
	}
	in.act = act
	for i, t := range targets {
		if err := act.Move(t.Component, t.PID); err != nil {
			return in, err
		}
		if q := r.CPUQuota[in.nodes[i].Kind()]; q > 0 {
			if err := act.SetQuota(t.Component, q); err != nil {
				return in, err
			}
			if in.quotaDirs[t.PID], err = act.Group(t.Component); err != nil {
				return in, err
			}
		}
	}
	if c := r.Isolation; c != nil {
		cfg := isolation.LoopConfig{Controller: c.controller(comps), Targets: targets, Period: c.Period, Probe: c.Probe,
			Log:      slog.New(slog.NewTextHandler(logWriter(logf), &slog.HandlerOptions{Level: slog.LevelWarn})),
			OnPeriod: in.period}
		if in.loop, err = isolation.NewLoop(cfg, act); err != nil {
			return in, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		in.stopL, in.loopE, in.act = cancel, make(chan error, 1), nil // Run closes it
		go func() { in.loopE <- in.loop.Run(ctx) }()
	}
	if r.Hogs > 0 {
		// Hogs share the nodes' parent, so that shares divide the CPU
		// between them and the nodes as between QiOi's containers. Idle
		// hogs go at the top instead: cpu.idle ranks a group only among its
		// siblings, and under net the round's whole subtree would still
		// weigh its 1024 against the processes outside it (the load
		// generator, the kernel's workers), which then waited behind a
		// hog's slice (docs/isolation.md, "Where the bound's tail was").
		hogParent := net
		if r.HogsIdle {
			hogParent = filepath.Dir(top.Dir())
		}
		if in.hogs, err = startHogs(r.Hogs, command, hogParent, r.HogsIdle); err != nil {
			return in, err
		}
	}
	in.watching = true
	go in.watch()
	return in, nil
}

// openRoundCgroup makes the round's cgroup, parent/strand-bench-PID/net,
// removing those of harnesses that died without removing theirs.
func openRoundCgroup(parent string) (*isolation.Actuator, error) {
	return isolation.Open(isolation.ActuatorOptions{Parent: parent, Prefix: "strand-bench", Components: []string{"net"}})
}

// begin is step 2; it arms HogsStop.
func (in *interfering) begin() error {
	sched, throttle := in.readSched(), in.readThrottle()
	var ops []uint64
	var at time.Time
	if in.hogs != nil {
		var err error
		if ops, at, err = in.hogs.ops(); err != nil {
			return err
		}
	}
	in.mu.Lock()
	in.t0, in.sched0, in.throttle0, in.hogOps0, in.hogAt0 = time.Now(), sched, throttle, ops, at
	in.mu.Unlock()
	if in.hogs != nil && in.r.HogsStop > 0 {
		time.AfterFunc(in.r.HogsStop, func() { in.stopHogs() })
	}
	return nil
}

// stopHogs reads the hogs' last counts and ends them (step 3, or part of
// step 4); only the first call does anything.
func (in *interfering) stopHogs() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.hogs == nil || !in.mu.hogsStopped.IsZero() {
		return
	}
	ops, at, err := in.hogs.ops()
	if err == nil && in.hogOps0 != nil {
		var d uint64
		for i := range ops {
			d += ops[i] - in.hogOps0[i]
		}
		in.mu.hogWindow = at.Sub(in.hogAt0).Seconds()
		in.mu.hogRate = float64(d) / in.mu.hogWindow
	}
	in.mu.err = errors.Join(in.mu.err, err, in.hogs.stop())
	in.mu.hogsStopped = time.Now()
}

// watch follows the controller's shares every 100 ms until end.
func (in *interfering) watch() {
	defer close(in.watchDone)
	tk := time.NewTicker(100 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-in.watchStop:
			return
		case now := <-tk.C:
			if in.loop == nil {
				continue
			}
			m := in.loop.Metrics()
			allDefault := true
			in.mu.Lock()
			for _, s := range m.Shares {
				in.mu.maxShares = max(in.mu.maxShares, s)
				allDefault = allDefault && s == int(isolation.DefaultShares)
			}
			if m.Samples != in.mu.lastSamples && m.Delay > 0 && !in.t0.IsZero() {
				in.mu.delaySum += m.Delay.Seconds() * 1000
				in.mu.delayN++
			}
			in.mu.lastSamples = m.Samples
			stopped := !in.mu.hogsStopped.IsZero()
			if stopped && allDefault && in.mu.defaultAt.IsZero() {
				in.mu.defaultAt = now
			} else if !allDefault {
				in.mu.defaultAt = time.Time{}
			}
			in.mu.Unlock()
		}
	}
}

func (in *interfering) stopWatch() {
	if in.watching {
		close(in.watchStop)
		<-in.watchDone
		in.watching = false
	}
}

// end is step 4: it returns the round's isolation figures.
func (in *interfering) end() (*IsolationResult, error) {
	sched1, throttle1 := in.readSched(), in.readThrottle()
	in.mu.Lock()
	elapsed := time.Since(in.t0).Seconds()
	in.mu.Unlock()
	in.stopHogs()
	in.stopWatch()
	var metrics isolation.LoopMetrics
	var err error
	if in.loop != nil {
		in.stopL()
		err = <-in.loopE
		// As the loop ended, before Run returned the shares to the
		// default; in.mu.periods then holds exactly the periods counted.
		metrics = in.loop.LastMetrics()
		in.loop = nil
	}
	// The nodes stay in their cgroups, with their quotas, until close:
	// the transactions still outstanding drain at the budget the round
	// measures, not at the machine's speed (which would flatter a round
	// whose few nodes are capped the most).
	in.mu.Lock()
	defer in.mu.Unlock()
	out := &IsolationResult{Hogs: in.r.Hogs, HogOpsPerS: in.mu.hogRate, HogWindowS: round2(in.mu.hogWindow), Quota: in.r.CPUQuota}
	for _, p := range in.nodes {
		a, b := in.sched0[p.PID], sched1[p.PID]
		ns := NodeSched{Name: p.Name}
		if run := (b.Run - a.Run).Seconds(); run > 0 && elapsed > 0 {
			ns.CPUPercent = round2(100 * run / elapsed)
			ns.WaitPerCPUS = round2((b.Wait - a.Wait).Seconds() / run)
		}
		if w, sl := isolation.Waits(a, b); sl > 0 {
			ns.WaitPerSliceMs = round2(float64(w.Microseconds()) / 1000 / float64(sl))
		}
		if ns.QuotaCores = in.r.CPUQuota[p.Kind()]; ns.QuotaCores > 0 {
			t0, ok0 := in.throttle0[p.PID]
			t1, ok1 := throttle1[p.PID]
			if n := t1.Periods - t0.Periods; ok0 && ok1 && n > 0 {
				ns.ThrottledPct = round2(100 * float64(t1.Throttled-t0.Throttled) / float64(n))
			}
		}
		out.Nodes = append(out.Nodes, ns)
	}
	if c := in.r.Isolation; c != nil {
		cr := &ControllerResult{K: c.K, DelayTarget: c.DelayTarget, Threshold: round2(metrics.Threshold),
			Decisions: metrics.Decisions, Samples: metrics.Samples, MaxShares: in.mu.maxShares, Exited: metrics.Exited,
			Periods: in.mu.periods}
		if in.mu.delayN > 0 {
			cr.MeanDelayMs = round2(in.mu.delaySum / float64(in.mu.delayN))
		}
		if in.r.HogsStop > 0 {
			cr.DefaultAfterStopS = -1
			if !in.mu.defaultAt.IsZero() {
				cr.DefaultAfterStopS = round2(max(in.mu.defaultAt.Sub(in.mu.hogsStopped).Seconds(), 0))
			}
		}
		out.Controller = cr
	}
	return out, errors.Join(err, in.mu.err)
}

// readSched reads every node's scheduler counters (a node that exited is
// left out).
func (in *interfering) readSched() map[int]isolation.Schedstat {
	out := map[int]isolation.Schedstat{}
	for _, p := range in.nodes {
		if s, err := isolation.ReadSchedstat(p.PID, time.Now()); err == nil {
			out[p.PID] = s
		}
	}
	return out
}

// readThrottle reads the CFS bandwidth counters of every node with a
// quota (a node whose cgroup cannot be read is left out).
func (in *interfering) readThrottle() map[int]isolation.Throttle {
	out := map[int]isolation.Throttle{}
	for pid, dir := range in.quotaDirs {
		if t, err := isolation.ReadThrottle(dir); err == nil {
			out[pid] = t
		}
	}
	return out
}

// close ends the hogs and the loop and removes every cgroup start made;
// it may be called again.
func (in *interfering) close() error {
	in.stopWatch()
	var err error
	if in.hogs != nil {
		in.stopHogs()
	}
	if in.loop != nil {
		in.stopL()
		err = <-in.loopE
		in.loop = nil
	}
	if in.act != nil {
		err = errors.Join(err, in.act.Close())
		in.act = nil
	}
	if in.top != nil {
		err = errors.Join(err, in.top.Close())
		in.top = nil
	}
	return err
}

// logWriter turns the loop's log lines into the harness's notes.
type logWriter func(string, ...any)

func (w logWriter) Write(p []byte) (int, error) {
	w("%s", string(p[:len(p)-min(len(p), 1)]))
	return len(p), nil
}
