package energy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// trace is a CPU-time source the test moves by hand.
type trace map[int]time.Duration

func (tr trace) read(pid int) (time.Duration, error) {
	c, ok := tr[pid]
	if !ok {
		return 0, fmt.Errorf("process %d: no such process", pid)
	}
	return c, nil
}

// TestModelTrace: known CPU-time traces of two processes give the energy
// the formula states, step by step.
func TestModelTrace(t *testing.T) {
	p := ModelParams{ActiveWatts: 10, IdleWatts: 2, Cores: 4}
	tr := trace{100: 7 * time.Second, 200: 3 * time.Second} // CPU used before the meter opened
	m, err := OpenModel(p, []int{100, 200}, tr.read, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		at     time.Duration // since open
		cpu100 time.Duration // since open
		cpu200 time.Duration
		want   float64
		what   string
	}{
		{0, 0, 0, 0, "nothing yet"},
		{time.Second, 0, 0, 8, "all idle: 4 cores × 1 s × 2 W"},
		{2 * time.Second, time.Second, 500 * time.Millisecond, 10*1.5 + 2*(8-1.5), "1.5 core-s busy of 8"},
		{3 * time.Second, 5 * time.Second, 4 * time.Second, 10*9 + 2*(12-9), "9 core-s busy of 12"},
		{4 * time.Second, 9 * time.Second, 7 * time.Second, 10 * 16, "every core busy: no idle term"},
		{5 * time.Second, 11 * time.Second, 9040 * time.Millisecond, 10 * 20.04, "ticks above C·t: idle clamps at 0"},
	} {
		tr[100], tr[200] = 7*time.Second+s.cpu100, 3*time.Second+s.cpu200
		r, err := m.Read(t0.Add(s.at))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.Joules-s.want) > 1e-9 {
			t.Errorf("%s: %v J, want %v", s.what, r.Joules, s.want)
		}
		if r.Source != SourceModel || r.Model == nil || *r.Model != p {
			t.Errorf("%s: source %q params %v, want model with %v", s.what, r.Source, r.Model, p)
		}
	}
	r, _ := m.Read(t0)
	r.Model.ActiveWatts = 99
	if m.Params().ActiveWatts != 10 {
		t.Error("changing a reading's parameters changed the meter's")
	}
}

// TestModelMonotonic: over random traces the modelled energy never
// falls, as the doc promises for IdleWatts ≤ ActiveWatts.
func TestModelMonotonic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		idle := rng.Float64() * 5
		p := ModelParams{ActiveWatts: idle + rng.Float64()*10, IdleWatts: idle, Cores: 1 + rng.IntN(8)}
		tr := trace{1: 0}
		m, err := OpenModel(p, []int{1}, tr.read, t0)
		if err != nil {
			t.Fatal(err)
		}
		var at time.Duration
		last := 0.0
		for range 40 {
			dt := time.Duration(rng.IntN(100)) * time.Millisecond
			at += dt
			// Busy time may run a tick ahead of wall time, as /proc's does.
			tr[1] += time.Duration(rng.Float64()*float64(p.Cores)*float64(dt)) + time.Duration(rng.IntN(2))*10*time.Millisecond
			r, err := m.Read(t0.Add(at))
			if err != nil {
				t.Fatal(err)
			}
			if r.Joules < last {
				t.Fatalf("%v: energy fell from %v to %v J", p, last, r.Joules)
			}
			last = r.Joules
		}
	}
}

func TestModelDefaults(t *testing.T) {
	m, err := OpenModel(ModelParams{}, []int{1}, trace{1: 0}.read, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := ModelParams{ActiveWatts: 8.5, IdleWatts: 1.44, Cores: runtime.NumCPU()}
	if m.Params() != want {
		t.Errorf("defaults %v, want %v", m.Params(), want)
	}
}

func TestModelValidate(t *testing.T) {
	for _, c := range []struct {
		p     ModelParams
		names string
	}{
		{ModelParams{ActiveWatts: -1, IdleWatts: 1, Cores: 1}, "active_watts: active power per core is -1 W"},
		{ModelParams{ActiveWatts: 5, IdleWatts: -0.5, Cores: 1}, "idle_watts: idle power per core is -0.5 W"},
		{ModelParams{ActiveWatts: 5, IdleWatts: 6, Cores: 1}, "idle_watts: idle power per core 6 W is above active 5 W"},
		{ModelParams{ActiveWatts: math.NaN(), IdleWatts: 1, Cores: 1}, "NaN"},
		{ModelParams{ActiveWatts: math.Inf(1), IdleWatts: 1, Cores: 1}, "+Inf"},
		{ModelParams{ActiveWatts: 0, IdleWatts: 0, Cores: 1}, "active_watts: active power per core is 0 W"},
		{ModelParams{ActiveWatts: 5, IdleWatts: 1, Cores: -2}, "cores: -2 cores"},
	} {
		err := c.p.Validate()
		if !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), c.names) {
			t.Errorf("Validate(%+v) = %v, want ErrModel naming %q", c.p, err, c.names)
		}
	}
	// Zero fields take defaults before validation; a negative idle does
	// not, and an idle above the default active is refused.
	if _, err := OpenModel(ModelParams{IdleWatts: 9}, []int{1}, trace{1: 0}.read, t0); !errors.Is(err, ErrModel) {
		t.Errorf("idle 9 W over the default active 8.5 W: %v, want ErrModel", err)
	}
	if err := (ModelParams{ActiveWatts: 3, IdleWatts: 3, Cores: 1}).Validate(); err != nil {
		t.Errorf("idle equal to active refused: %v", err)
	}
}

func TestModelProcessFaults(t *testing.T) {
	if _, err := OpenModel(ModelParams{}, nil, trace{}.read, t0); err == nil {
		t.Error("a model over no processes opened")
	}
	if _, err := OpenModel(ModelParams{}, []int{1, 77}, trace{1: 0}.read, t0); err == nil || !strings.Contains(err.Error(), "77") {
		t.Errorf("unreadable process 77: %v, want an error naming it", err)
	}
	tr := trace{1: time.Second}
	m, err := OpenModel(ModelParams{}, []int{1}, tr.read, t0)
	if err != nil {
		t.Fatal(err)
	}
	tr[1] = 0
	if _, err := m.Read(t0.Add(time.Second)); !errors.Is(err, ErrTimeline) {
		t.Errorf("CPU time falling: %v, want ErrTimeline", err)
	}
	tr[1] = time.Second
	if _, err := m.Read(t0.Add(-time.Second)); !errors.Is(err, ErrTimeline) {
		t.Errorf("read before the start: %v, want ErrTimeline", err)
	}
	delete(tr, 1)
	if _, err := m.Read(t0.Add(time.Second)); err == nil {
		t.Error("a vanished process read without error")
	}
}

// TestModelThisProcess runs the model over this process's real CPU time
// (pid 0 through getrusage, our own PID through /proc): burning CPU
// makes energy at least ActiveWatts times it.
func TestModelThisProcess(t *testing.T) {
	p := ModelParams{ActiveWatts: 10, IdleWatts: 0, Cores: 1}
	start := time.Now()
	m, err := OpenModel(p, []int{0, os.Getpid()}, nil, start)
	if err != nil {
		t.Fatal(err)
	}
	c0, _ := ProcessCPU(0)
	for {
		if c, _ := ProcessCPU(0); c-c0 >= 50*time.Millisecond {
			break
		}
	}
	r, err := m.Read(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// Both readers count the same 50 ms and more; /proc to 10 ms ticks.
	if r.Joules < 10*2*0.04 {
		t.Errorf("%v J for two counts of ≥50 ms CPU at 10 W, want ≥ 0.8", r.Joules)
	}
}
