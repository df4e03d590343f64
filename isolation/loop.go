package isolation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// The loop. Loop is the one goroutine that owns a Controller and an
// Actuator (the caller's duties in doc.go). At each tick t it, in order:
//
//  1. drops every target whose process is no longer in its component's
//     cgroup (it exited, or someone moved it out) and carries on with the
//     others; it never moves a PID again after the first move, so a PID
//     reused by an unrelated process is never touched;
//  2. scrapes every remaining target that has a metrics address, all at
//     once, each bounded by the period; a target that does not answer is
//     left out of this period's sample and the next (a rate needs two
//     readings);
//  3. measures the period since the previous tick (Measure, and Delay
//     over every controlled target's scheduler counters) and, when there
//     is a sample, feeds it to Controller.Observe with time t; when no
//     peer answered but the delay was measured, the sample is Unscraped:
//     the delay alone;
//  4. applies the changes in order and logs each with its reason.
//
// With Probe, between ticks it also reads the nodes' scheduler counters
// every Probe (no scrape: a few /proc files per thread) and passes the
// delay since the previous reading to Controller.Probe, applying and
// logging what it raises; a probe never lowers a share.
//
// When ctx ends it applies Controller.Stop's changes (every share back to
// the default) and closes the actuator, which moves the node processes
// back to the parent cgroup and removes this run's cgroups: the nodes run
// on, as they did before. If the loop's process dies instead (SIGKILL, a
// crash), the shares stay where they last were, which is valid (every
// share is in [DefaultShares, Cap]), the nodes stay in this run's
// cgroups, and the next Open removes them (see cleanup.go).

// DefaultPeriod is LoopConfig.Period's default: QiOi's one-second period.
const DefaultPeriod = time.Second

// Target is one node process the loop controls.
type Target struct {
	// Name names the node in logs.
	Name string
	// Component is the cgroup the process goes into: one of the
	// controller's components.
	Component string
	// PID is the node's process; its threads and the children it forks
	// later follow it.
	PID int
	// Metrics is the host:port of the node's /metrics, scraped each
	// period; empty for nodes that commit nothing (orderers).
	Metrics string
}

// LoopConfig configures a Loop.
type LoopConfig struct {
	// Controller configures the decision core (see Config).
	Controller Config
	// Targets are the node processes to control. At least one must have
	// a metrics address.
	Targets []Target
	// Period is the measurement period when Ticks is nil, and bounds
	// each scrape. Default DefaultPeriod.
	Period time.Duration
	// Ticks, when set, ends each period instead of a ticker of Period:
	// the tick's value is the period's end time (tests inject time here).
	Ticks <-chan time.Time
	// Start, when set with Ticks, is the time of a first reading Run
	// takes as soon as the targets are in their cgroups, so that the
	// first tick already ends a sampled period; zero with Ticks takes
	// none (the first tick's reading is the first). With a ticker of
	// Period, Run always takes it, at the time it starts: without it the
	// first sample came two periods after the start, and interference
	// that began with the loop (a bench round's hogs) went unanswered for
	// both.
	Start time.Time
	// Probe, when > 0 and less than Period, is how often the loop reads
	// the nodes' scheduler counters between periods to answer a delay
	// above ProbeFactor times the controller's DelayTarget at once
	// (Controller.Probe). 0 means no probes.
	Probe time.Duration
	// ProbeTicks, when set, ends each probe window instead of a ticker
	// of Probe (tests inject time here); it needs Ticks.
	ProbeTicks <-chan time.Time
	// Scrape reads one target's /metrics at addr for the period ending at
	// at. Default: HTTP GET http://addr/metrics, parsed by ParseReading.
	Scrape func(ctx context.Context, addr string, at time.Time) (Reading, error)
	// Log receives every decision and every target that leaves control.
	// Default slog.Default().
	Log *slog.Logger
	// OnPeriod, if set, is told of every period that made a sample, once
	// its changes are applied and before Metrics counts the period; it
	// runs on the loop's goroutine and must return quickly.
	OnPeriod func(PeriodReport)
}

// PeriodReport is one control period as the loop handled it: what it
// measured, the objective it compared with, what it changed and why, and
// every component's share afterwards.
type PeriodReport struct {
	At        time.Time // the period's end
	Sample    Sample
	Threshold float64 // 0 while it is learned
	// Changes are the probes' changes during the period (their reasons
	// start with "probe:"), then the period's own, in the order applied.
	Changes []Change
	Shares  map[string]int // a copy, the caller's to keep
}

// LoopMetrics is a snapshot of the loop's state and counters.
type LoopMetrics struct {
	Periods      uint64 `metric:"counter"` // Control periods handled.
	Samples      uint64 `metric:"counter"` // Periods that made a sample.
	IdleSamples  uint64 `metric:"counter"` // Samples with nothing submitted or committed.
	Decisions    uint64 `metric:"counter"` // CPU share changes applied.
	ScrapeErrors uint64 `metric:"counter"` // Scrapes of the nodes' metrics that failed.
	Exited       uint64 `metric:"counter"` // Node processes that left control (exited).
	Controlled   int    `metric:"gauge"`   // Node processes under control.
	// The last sample's committed transactions per second (0 when not
	// measured).
	Throughput float64 `metric:"gauge"`
	// The last sample's p99 commit latency (0 when not measured).
	P99 time.Duration `metric:"gauge"`
	// The last sample's mean run-queue wait per time slice of the
	// controlled nodes (0 when not measured).
	Delay time.Duration `metric:"gauge"`
	// The throughput objective in transactions per second, 0 while it is
	// learned.
	Threshold float64 `metric:"gauge"`
	// Each component's CPU share (weight) as last applied.
	Shares map[string]int `metric:"gauge,key=component"`
}

// String formats the snapshot on one line.
func (m LoopMetrics) String() string {
	names := make([]string, 0, len(m.Shares))
	for n := range m.Shares {
		names = append(names, n)
	}
	sort.Strings(names)
	var sh []string
	for _, n := range names {
		sh = append(sh, fmt.Sprintf("%s %d", n, m.Shares[n]))
	}
	return fmt.Sprintf("periods %d samples %d (idle %d) decisions %d scrape-errors %d exited %d controlled %d "+
		"throughput %.1f tps p99 %s delay %s threshold %.1f tps shares [%s]",
		m.Periods, m.Samples, m.IdleSamples, m.Decisions, m.ScrapeErrors, m.Exited, m.Controlled,
		m.Throughput, m.P99, m.Delay, m.Threshold, strings.Join(sh, ", "))
}

// Loop runs the controller against a network's node processes.
type Loop struct {
	cfg     LoopConfig
	ctl     *Controller
	act     *Actuator
	targets []Target // those still controlled
	prev    map[string]Reading
	sched   map[int]Schedstat // the previous tick's counters per controlled PID
	probed  map[int]Schedstat // the previous tick's or probe's counters, whichever is later
	failing map[string]bool   // targets whose last scrape failed: warned once per run of failures
	probes  []Change          // applied by probes since the last tick

	mu struct {
		sync.Mutex
		m LoopMetrics
	}
	// last is the metrics as the loop ended, before Run returned the
	// shares to the default (LastMetrics); written by Run only.
	last LoopMetrics
}

// NewLoop checks cfg and returns a loop that will drive act, which must
// have a cgroup for every component of cfg.Controller. Run takes act
// over: it closes it when it returns.
func NewLoop(cfg LoopConfig, act *Actuator) (*Loop, error) {
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Scrape == nil {
		cfg.Scrape = httpScrape
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Period < 0 {
		return nil, fmt.Errorf("%w: LoopConfig.Period is %s, want > 0 (0 means %s)", ErrBadConfig, cfg.Period, DefaultPeriod)
	}
	if cfg.Probe < 0 || cfg.Probe > 0 && cfg.Probe >= cfg.Period {
		return nil, fmt.Errorf("%w: LoopConfig.Probe is %s, want 0 (no probes) or in (0, %s) (less than the period)", ErrBadConfig, cfg.Probe, cfg.Period)
	}
	if cfg.ProbeTicks != nil && cfg.Ticks == nil {
		return nil, fmt.Errorf("%w: LoopConfig.ProbeTicks is set without Ticks, want both (tests) or neither", ErrBadConfig)
	}
	ctl, err := New(cfg.Controller)
	if err != nil {
		return nil, err
	}
	comps := ctl.Components()
	scraped := 0
	for i, t := range cfg.Targets {
		if !slices.ContainsFunc(comps, func(c Component) bool { return c.Name == t.Component }) {
			return nil, fmt.Errorf("%w: LoopConfig.Targets[%d] (%s) has component %q, want one of the controller's %s",
				ErrBadConfig, i, t.Name, t.Component, componentNames(comps))
		}
		if t.PID <= 0 {
			return nil, fmt.Errorf("%w: LoopConfig.Targets[%d] (%s) has PID %d, want a process id > 0", ErrBadConfig, i, t.Name, t.PID)
		}
		if t.Metrics != "" {
			scraped++
		}
	}
	if scraped == 0 {
		return nil, fmt.Errorf("%w: none of the %d LoopConfig.Targets has a metrics address, want at least one peer to measure", ErrBadConfig, len(cfg.Targets))
	}
	for _, c := range comps {
		if _, err := act.Group(c.Name); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
	}
	l := &Loop{cfg: cfg, ctl: ctl, act: act, targets: slices.Clone(cfg.Targets), failing: map[string]bool{}}
	l.mu.m.Shares = map[string]int{}
	for _, c := range comps {
		l.mu.m.Shares[c.Name] = int(DefaultShares)
	}
	return l, nil
}

func componentNames(cs []Component) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, ", ")
}

// Metrics returns a snapshot of the loop's counters; it is safe to call
// from any goroutine.
func (l *Loop) Metrics() LoopMetrics {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.mu.m
	m.Shares = make(map[string]int, len(l.mu.m.Shares))
	for k, v := range l.mu.m.Shares {
		m.Shares[k] = v
	}
	return m
}

// LastMetrics is the snapshot of the loop's counters taken when its last
// period had ended and before Run returned the shares to the default:
// every sample counted there has been reported to LoopConfig.OnPeriod,
// and none after it. Call it only after Run has returned.
func (l *Loop) LastMetrics() LoopMetrics { return l.last }

// Run moves every target into its component's cgroup and then runs the
// loop until ctx ends or an error stops it. Either way it returns every
// share to the default and closes the actuator before it returns. A
// target whose process has already exited at the first move is left out
// with a warning; any other failed move, and any failed Apply, stops the
// loop with an error (a cgroup vanished or became unwritable). Run is
// for one call: the actuator is closed when it returns.
func (l *Loop) Run(ctx context.Context) (err error) {
	defer func() {
		l.last = l.Metrics()
		err = errors.Join(err, l.stop())
	}()
	if err := l.moveAll(); err != nil {
		return err
	}
	ticks, start, probes := l.cfg.Ticks, l.cfg.Start, l.cfg.ProbeTicks
	if ticks == nil {
		tk := time.NewTicker(l.cfg.Period)
		defer tk.Stop()
		ticks, start = tk.C, time.Now()
		if l.cfg.Probe > 0 {
			pk := time.NewTicker(l.cfg.Probe)
			defer pk.Stop()
			probes = pk.C
		}
	}
	if !start.IsZero() {
		l.prev, l.sched = l.scrapeAll(ctx, start), l.readSched()
		l.probed = l.sched
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-ticks:
			if err := l.period(ctx, now); err != nil {
				return err
			}
		case <-probes:
			if err := l.probe(); err != nil {
				return err
			}
		}
	}
}

// probe reads the scheduler counters and lets the controller raise the
// shares by the delay since the previous reading (a tick's or a
// probe's). A window with too little load to measure (Delay's rule)
// changes nothing.
func (l *Loop) probe() error {
	sched := l.readSched()
	delay, measured := Delay(l.probed, sched)
	l.probed = sched
	if !measured {
		return nil
	}
	changes, err := l.ctl.Probe(delay)
	if err != nil {
		return err
	}
	if err := l.apply(changes); err != nil {
		return err
	}
	l.probes = append(l.probes, changes...)
	return nil
}

// moveAll moves each target into its component's cgroup.
func (l *Loop) moveAll() error {
	kept := l.targets[:0]
	for _, t := range l.targets {
		err := l.act.Move(t.Component, t.PID)
		if err != nil && !alive(t.PID) {
			l.cfg.Log.Warn("isolation: node exited before it was moved; not controlled", "node", t.Name, "pid", t.PID)
			l.count(func(m *LoopMetrics) { m.Exited++ })
			continue
		}
		if err != nil {
			return fmt.Errorf("isolation: node %s: %w", t.Name, err)
		}
		l.cfg.Log.Info("isolation: node under control", "node", t.Name, "pid", t.PID, "cgroup", t.Component)
		kept = append(kept, t)
	}
	l.targets = kept
	l.count(func(m *LoopMetrics) { m.Controlled = len(kept) })
	return nil
}

// period runs steps 1 to 4 for the period ending at now.
func (l *Loop) period(ctx context.Context, now time.Time) error {
	// Periods counts a period once it is wholly handled (its sample
	// observed, its changes applied and counted), so that a reader who
	// sees Periods reach n sees all of period n.
	defer l.count(func(m *LoopMetrics) { m.Periods++ })
	probed := l.probes
	l.probes = nil
	if err := l.dropExited(); err != nil {
		return err
	}
	cur := l.scrapeAll(ctx, now)
	sample, ok := Measure(l.prev, cur)
	l.prev = cur
	sched := l.readSched()
	delay, measured := Delay(l.sched, sched)
	l.sched, l.probed = sched, sched
	if !ok && measured {
		// No peer answered, but the kernel says how the nodes wait.
		sample, ok = Sample{Unscraped: true}, true
	}
	sample.Delay = delay
	if !ok {
		return nil
	}
	changes, err := l.ctl.Observe(sample, now)
	if err != nil {
		return err
	}
	th, _ := l.ctl.Threshold()
	l.count(func(m *LoopMetrics) {
		m.Samples++
		if sample.Idle {
			m.IdleSamples++
		}
		m.Throughput, m.P99, m.Delay, m.Threshold = sample.Throughput, sample.P99, sample.Delay, th
	})
	if err := l.apply(changes); err != nil {
		return err
	}
	if l.cfg.OnPeriod != nil {
		l.mu.Lock()
		shares := maps.Clone(l.mu.m.Shares)
		l.mu.Unlock()
		l.cfg.OnPeriod(PeriodReport{At: now, Sample: sample, Threshold: th, Changes: append(probed, changes...), Shares: shares})
	}
	return nil
}

// apply applies changes in order, logging and counting each.
func (l *Loop) apply(changes []Change) error {
	for _, c := range changes {
		if err := l.act.Apply([]Change{c}); err != nil {
			return err
		}
		l.cfg.Log.Info("isolation: share changed", "component", c.Component, "from", int(c.From), "to", int(c.To), "reason", c.Reason)
		l.count(func(m *LoopMetrics) { m.Decisions++; m.Shares[c.Component] = int(c.To) })
	}
	return nil
}

// dropExited removes the targets whose process is no longer in their
// component's cgroup.
func (l *Loop) dropExited() error {
	procs := map[string][]int{}
	kept := l.targets[:0]
	for _, t := range l.targets {
		if _, ok := procs[t.Component]; !ok {
			pids, err := l.act.Procs(t.Component)
			if err != nil {
				return err
			}
			procs[t.Component] = pids
		}
		if !slices.Contains(procs[t.Component], t.PID) {
			l.cfg.Log.Warn("isolation: node left its cgroup (exited or moved out); no longer controlled",
				"node", t.Name, "pid", t.PID, "cgroup", t.Component)
			l.count(func(m *LoopMetrics) { m.Exited++ })
			continue
		}
		kept = append(kept, t)
	}
	l.targets = kept
	l.count(func(m *LoopMetrics) { m.Controlled = len(kept) })
	return nil
}

// readSched reads the scheduler counters of every controlled target; a
// target whose counters cannot be read (it just exited) is left out of
// this period's delay and dropped at the next tick.
func (l *Loop) readSched() map[int]Schedstat {
	out := make(map[int]Schedstat, len(l.targets))
	for _, t := range l.targets {
		if s, err := ReadSchedstat(t.PID, time.Now()); err == nil {
			out[t.PID] = s
		}
	}
	return out
}

// scrapeAll reads every controlled target that has a metrics address,
// concurrently, and returns the readings of those that answered.
func (l *Loop) scrapeAll(ctx context.Context, now time.Time) map[string]Reading {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.Period)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]Reading{}
	for _, t := range l.targets {
		if t.Metrics == "" {
			continue
		}
		wg.Go(func() {
			r, err := l.cfg.Scrape(ctx, t.Metrics, now)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				log := l.cfg.Log.Debug
				if !l.failing[t.Name] {
					log = l.cfg.Log.Warn
				}
				log("isolation: scrape failed; node left out of the sample until it answers again", "node", t.Name, "metrics", t.Metrics, "err", err)
				l.failing[t.Name] = true
				l.count(func(m *LoopMetrics) { m.ScrapeErrors++ })
				return
			}
			if l.failing[t.Name] {
				l.cfg.Log.Info("isolation: node answers again", "node", t.Name, "metrics", t.Metrics)
			}
			delete(l.failing, t.Name)
			out[t.Name] = r
		})
	}
	wg.Wait()
	return out
}

// stop returns every share to the default and closes the actuator.
func (l *Loop) stop() error {
	err := l.apply(l.ctl.Stop())
	if err != nil {
		l.cfg.Log.Error("isolation: returning the shares to the default failed; removing the cgroups anyway", "err", err)
	}
	return errors.Join(err, l.act.Close())
}

func (l *Loop) count(f func(*LoopMetrics)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(&l.mu.m)
}

// httpScrape is LoopConfig.Scrape's default.
func httpScrape(ctx context.Context, addr string, at time.Time) (Reading, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return Reading{}, fmt.Errorf("isolation: metrics address %q: %w", addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Reading{}, fmt.Errorf("isolation: scraping %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Reading{}, fmt.Errorf("isolation: scraping %s: HTTP %s, want 200", addr, resp.Status)
	}
	r, err := ParseReading(resp.Body, at)
	if err != nil {
		return Reading{}, fmt.Errorf("%w (from %s)", err, addr)
	}
	return r, nil
}
