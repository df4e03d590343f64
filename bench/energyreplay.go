package bench

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/energy"
)

// EnergySpec asks a replay to measure its energy.
type EnergySpec struct {
	Meter energy.Config `json:"meter"`
	// Every is the energy log's period between busy edges; default
	// DefaultEnergyEvery.
	Every time.Duration `json:"every"`
}

// DefaultEnergyEvery is EnergySpec.Every's default. The study logged
// every 10 ms because its log had only periodic readings; this one also
// reads at every busy edge, where the power steps, so a step of the log
// is wholly busy or wholly idle except where an edge went unread, and
// the period is a backstop. Each periodic reading wakes the process
// (BenchmarkEnergySampler: about 100 µs of CPU from idle on the
// development machine), which at 10 ms costs a peer at a quarter of its
// rate over 2% of its CPU; at 100 ms, a tenth of that.
const DefaultEnergyEvery = 100 * time.Millisecond

// ReplayEnergy is what a replay's energy recorder measured: the whole
// replay beside the peer's busy periods (the union of its receive,
// verify, validate and persist intervals), and what the meter itself
// cost.
type ReplayEnergy struct {
	Source       energy.Source       `json:"source"`
	Model        *energy.ModelParams `json:"model,omitempty"`
	WholeS       float64             `json:"whole_s"`
	WholeJ       float64             `json:"whole_j"`
	BusyS        float64             `json:"busy_s"`
	BusyJ        float64             `json:"busy_j"`
	BusyOutsideS float64             `json:"busy_outside_s"`
	// ValidationS and ValidationJ are over the study's own busy time,
	// tt_c (§III-D): the union of the receive, verify and validate
	// intervals only,
	// since the study excludes the ledger write (here stage 3: block
	// store append and fsync, state batch, notify) from each block's
	// validation latency. Busy* keep it: the stricter figure. The time
	// is the study's; the energy is not quite: where a persist overlaps
	// the next block's verification (a saturated peer) its CPU lies
	// inside a verify interval and is charged, which the study's
	// unpipelined Fabric peer never had to decide.
	ValidationS float64 `json:"validation_s"`
	ValidationJ float64 `json:"validation_j"`
	// StageBusyS is each stage's busy time (its intervals' union): with
	// BusyS, how much of the busy periods each stage covered, a persist
	// being mostly the fsync's wait.
	StageBusyS map[string]float64 `json:"stage_busy_s,omitempty"`
	Readings   int                `json:"readings"`
	// Ticks is how many readings were periodic, each a wake-up of the
	// process; the rest were taken at busy edges by goroutines already
	// running.
	Ticks int `json:"ticks"`
	// MeterCPUS is the CPU the readings took (periodic and edge), each
	// measured on its own thread; the runtime's timer wake-ups are not in
	// it (BenchmarkEnergySampler measures a whole tick).
	MeterCPUS float64 `json:"meter_cpu_s"`
}

// energyRecorder is the replay's energy log. Readings come from two
// places: a sampling goroutine every Every (the study's method), and the
// edges of busy periods, where the power steps: just before each paced
// block is handed to Deliver (after the bench has read it from the chain
// file), where the block's receive interval starts, at the end of each
// validate (the end of a block's validation, the study's busy time) and
// at the end of each persist, which ends a block's work when the peer is
// not saturated. The edge readings keep Overlay from smearing a block's
// burst into the idle gap beside it, which would charge part of the
// burst to idle and flatter the busy figure at low rates: a step of the
// log that is a fraction f busy is charged f of its energy, so a step
// that began well before the busy period (at a 10 ms period; or, before
// the receive interval existed, at the pre-delivery reading, ahead of
// Deliver's own work) charges the burst's CPU at the step's average.
type energyRecorder struct {
	every  time.Duration
	active atomic.Bool // between start and finish; onBusy ignores the rest
	stop   chan struct{}
	done   chan struct{}
	mu     struct {
		sync.Mutex
		meter energy.Meter
		log   energy.Log
		last  time.Time
		busy  []energy.Interval
		cpu   time.Duration // the readings' CPU time
		ticks int
		err   error
	}
}

func newEnergyRecorder(spec *EnergySpec, blocks int) *energyRecorder {
	r := &energyRecorder{every: spec.Every, stop: make(chan struct{}), done: make(chan struct{})}
	if r.every <= 0 {
		r.every = DefaultEnergyEvery
	}
	r.mu.busy = make([]energy.Interval, 0, 3*blocks+8)
	return r
}

// onBusy is the committer's Options.OnBusy.
func (r *energyRecorder) onBusy(s committer.Stage, start, end time.Time) {
	if !r.active.Load() {
		return
	}
	r.mu.Lock()
	r.mu.busy = append(r.mu.busy, energy.Interval{Stage: s.String(), Start: start, End: end})
	r.mu.Unlock()
	// A validate ends a block's validation (the study's busy time) and a
	// persist its ledger write: both are edges where the power steps when
	// the peer is not saturated, so both are read.
	if s == committer.StagePersist || s == committer.StageValidate {
		r.edge()
	}
}

// start opens the meter on this process and starts sampling.
func (r *energyRecorder) start(cfg energy.Config) error {
	now := time.Now()
	m, err := energy.Open(cfg, []int{0}, now)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.mu.meter = m
	r.readLocked(now)
	err = r.mu.err
	r.mu.Unlock()
	if err != nil {
		return err
	}
	r.active.Store(true)
	go r.sample()
	return nil
}

// sample reads the meter every period until stop.
func (r *energyRecorder) sample() {
	defer close(r.done)
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.mu.Lock()
			r.mu.ticks++
			r.readLocked(time.Now())
			r.mu.Unlock()
		}
	}
}

// edge takes a reading at a busy edge.
func (r *energyRecorder) edge() {
	r.mu.Lock()
	r.readLocked(time.Now())
	r.mu.Unlock()
}

// readLocked appends a reading at now; the first error sticks. The
// reading's cost is the calling thread's CPU time across it, with the
// goroutine locked to its thread for the while (without the lock a
// preemption could move it and the difference would be between two
// threads' clocks). The Go runtime's wake-up of the sampling goroutine
// is not in it; BenchmarkEnergySampler measures the whole cost of a
// tick.
func (r *energyRecorder) readLocked(now time.Time) {
	if r.mu.err != nil || !now.After(r.mu.last) {
		return
	}
	runtime.LockOSThread() // both clock readings on one thread
	c0 := threadCPU()
	rd, err := r.mu.meter.Read(now)
	if err == nil {
		err = r.mu.log.Add(rd)
	}
	if c1 := threadCPU(); c1 >= c0 {
		r.mu.cpu += c1 - c0
	}
	runtime.UnlockOSThread()
	if err != nil {
		r.mu.err = fmt.Errorf("bench: energy meter: %w", err)
		return
	}
	r.mu.last = now
}

// finish takes the last reading, stops sampling and lays the busy
// intervals over the log.
func (r *energyRecorder) finish() (*ReplayEnergy, error) {
	r.edge()
	r.active.Store(false)
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.err != nil {
		return nil, r.mu.err
	}
	m, err := r.mu.log.Overlay(r.mu.busy, 0)
	if err != nil {
		return nil, fmt.Errorf("bench: energy: %w", err)
	}
	mv, err := r.mu.log.Overlay(validation(r.mu.busy), 0)
	if err != nil {
		return nil, fmt.Errorf("bench: energy: %w", err)
	}
	stages := map[string][]energy.Interval{}
	for _, iv := range r.mu.busy {
		stages[iv.Stage] = append(stages[iv.Stage], iv)
	}
	stageBusy := map[string]float64{}
	for name, ivs := range stages {
		u, err := energy.Union(ivs)
		if err != nil {
			return nil, fmt.Errorf("bench: energy: %w", err)
		}
		var d time.Duration
		for _, iv := range u {
			d += iv.End.Sub(iv.Start)
		}
		stageBusy[name] = d.Seconds()
	}
	return &ReplayEnergy{
		Source: m.Source, Model: m.Model, StageBusyS: stageBusy,
		WholeS: m.Whole.Duration.Seconds(), WholeJ: m.Whole.Joules,
		BusyS: m.Busy.Duration.Seconds(), BusyJ: m.Busy.Joules, BusyOutsideS: m.BusyOutside.Seconds(),
		ValidationS: mv.Busy.Duration.Seconds(), ValidationJ: mv.Busy.Joules,
		Readings: len(r.mu.log.Readings()), Ticks: r.mu.ticks,
		MeterCPUS: r.mu.cpu.Seconds(),
	}, nil
}

// validation returns the receive, verify and validate intervals of busy:
// the study's busy time, without the ledger write.
func validation(busy []energy.Interval) []energy.Interval {
	out := make([]energy.Interval, 0, len(busy))
	persist := committer.StagePersist.String()
	for _, iv := range busy {
		if iv.Stage != persist {
			out = append(out, iv)
		}
	}
	return out
}

// threadCPU is the calling thread's CPU time up to now, 0 where it
// cannot be read. CLOCK_THREAD_CPUTIME_ID counts the running slice too;
// getrusage(RUSAGE_THREAD) does not (it moves only at ticks and context
// switches), so it cannot time a few microseconds.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
