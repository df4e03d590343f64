package bench

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/energy"
)

// EnergySpec asks a replay to measure its energy.
type EnergySpec struct {
	Meter energy.Config `json:"meter"`
	// Every is the energy log's period; default 10 ms, the study's.
	Every time.Duration `json:"every"`
}

// DefaultEnergyEvery is EnergySpec.Every's default: the study's 10 ms.
const DefaultEnergyEvery = 10 * time.Millisecond

// ReplayEnergy is what a replay's energy recorder measured: the whole
// replay beside the peer's busy periods (the union of its verify,
// validate and persist intervals), and what the meter itself cost.
type ReplayEnergy struct {
	Source       energy.Source       `json:"source"`
	Model        *energy.ModelParams `json:"model,omitempty"`
	WholeS       float64             `json:"whole_s"`
	WholeJ       float64             `json:"whole_j"`
	BusyS        float64             `json:"busy_s"`
	BusyJ        float64             `json:"busy_j"`
	BusyOutsideS float64             `json:"busy_outside_s"`
	Readings     int                 `json:"readings"`
	// MeterCPUS is the CPU the measurement took: the sampling thread's
	// own CPU time (wake-ups included) plus the edge readings' time.
	MeterCPUS float64 `json:"meter_cpu_s"`
}

// energyRecorder is the replay's energy log. Readings come from two
// places: a sampling goroutine every Every (the study's method), and the
// edges of busy periods, where the power steps: just before each paced
// block is delivered, and at the end of each persist, which ends a
// block's work when the peer is not saturated. The edge readings keep
// Overlay from smearing a block's burst into the idle gap beside it,
// which at a 10 ms period would otherwise charge part of the burst to
// idle and flatter the busy figure at low rates.
type energyRecorder struct {
	every  time.Duration
	active atomic.Bool // between start and finish; onBusy ignores the rest
	stop   chan struct{}
	done   chan struct{}
	// samplerCPU is written by the sampler before it closes done.
	samplerCPU time.Duration
	mu         struct {
		sync.Mutex
		meter   energy.Meter
		log     energy.Log
		last    time.Time
		busy    []energy.Interval
		edgeCPU time.Duration
		err     error
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
	if s == committer.StagePersist {
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

// sample runs on a thread of its own, so that the thread's CPU time is
// the sampler's cost.
func (r *energyRecorder) sample() {
	defer close(r.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			r.samplerCPU = threadCPU() - cpu0
			return
		case <-t.C:
			r.mu.Lock()
			r.readLocked(time.Now())
			r.mu.Unlock()
		}
	}
}

// edge takes a reading at a busy edge, timing it as meter cost.
func (r *energyRecorder) edge() {
	t0 := time.Now()
	r.mu.Lock()
	r.readLocked(time.Now())
	r.mu.edgeCPU += time.Since(t0)
	r.mu.Unlock()
}

// readLocked appends a reading at now; the first error sticks.
func (r *energyRecorder) readLocked(now time.Time) {
	if r.mu.err != nil || !now.After(r.mu.last) {
		return
	}
	rd, err := r.mu.meter.Read(now)
	if err == nil {
		err = r.mu.log.Add(rd)
	}
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
	return &ReplayEnergy{
		Source: m.Source, Model: m.Model,
		WholeS: m.Whole.Duration.Seconds(), WholeJ: m.Whole.Joules,
		BusyS: m.Busy.Duration.Seconds(), BusyJ: m.Busy.Joules, BusyOutsideS: m.BusyOutside.Seconds(),
		Readings:  len(r.mu.log.Readings()),
		MeterCPUS: (r.samplerCPU + r.mu.edgeCPU).Seconds(),
	}, nil
}

// rusageThread is Linux's RUSAGE_THREAD, which package syscall lacks.
const rusageThread = 1

// threadCPU is the calling thread's CPU time, 0 where it cannot be read.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
