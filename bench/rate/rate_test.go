package rate

import (
	"math"
	"strings"
	"testing"
	"time"
)

// sim drives a controller with a fake clock against a system that
// completes transactions at most capacity per second (FIFO, zero latency
// below capacity). It polls every tick and returns the counts at the end
// and the largest outstanding seen.
type sim struct {
	capacity float64
	c        Counts
	served   float64
	maxOut   int64
}

func (s *sim) run(ctl Controller, d, tick time.Duration) {
	for t := time.Duration(0); t <= d; t += tick {
		s.c.Started += int64(ctl.Poll(t, s.c).Start)
		s.maxOut = max(s.maxOut, s.c.Outstanding())
		s.served = min(s.served+s.capacity*tick.Seconds(), float64(s.c.Started))
		s.c.Completed = int64(s.served)
	}
}

func mustNew(t *testing.T, cfg Config, d time.Duration) Controller {
	t.Helper()
	ctl, err := New(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	return ctl
}

func TestFixedRate(t *testing.T) {
	ctl := mustNew(t, Config{Kind: "fixed-rate", TPS: 500}, 10*time.Second)
	s := &sim{capacity: 1e9}
	s.run(ctl, 10*time.Second, time.Millisecond)
	if s.c.Started != 5000 {
		t.Fatalf("started %d in 10 s at 500 tps, want 5000", s.c.Started)
	}
	// Open loop: it keeps sending when the system falls behind.
	s = &sim{capacity: 100}
	ctl, _ = New(Config{Kind: "fixed-rate", TPS: 500}, 10*time.Second)
	s.run(ctl, 10*time.Second, time.Millisecond)
	if s.c.Started != 5000 || s.maxOut < 3900 {
		t.Fatalf("started %d, most outstanding %d against a 100 tps system: want 5000 and about 4000", s.c.Started, s.maxOut)
	}
	if d := ctl.Poll(0, Counts{}); d.Wait <= 0 || d.Wait > maxTick {
		t.Fatalf("wait %v: want between 0 and %v", d.Wait, maxTick)
	}
}

func TestFixedLoad(t *testing.T) {
	ctl := FixedLoad(8)
	if d := ctl.Poll(0, Counts{Started: 5, Completed: 2}); d.Start != 5 || d.Wait != 0 {
		t.Fatalf("decision %+v with 3 outstanding: want start 5, wait for a completion", d)
	}
	if d := ctl.Poll(0, Counts{Started: 10, Completed: 1}); d.Start != 0 {
		t.Fatalf("decision %+v with 9 outstanding: want start 0", d)
	}
	s := &sim{capacity: 1000}
	s.run(ctl, time.Second, time.Millisecond)
	if s.maxOut != 8 {
		t.Fatalf("most outstanding %d, want 8", s.maxOut)
	}
}

func TestLinearRamp(t *testing.T) {
	ctl := mustNew(t, Config{Kind: "linear-rate", From: 100, To: 300}, 10*time.Second)
	s := &sim{capacity: 1e9}
	s.run(ctl, 5*time.Second, time.Millisecond)
	// ∫0..5 (100 + 20 t) dt = 500 + 250.
	if s.c.Started != 750 {
		t.Fatalf("started %d after 5 s of a 100→300 ramp over 10 s, want 750", s.c.Started)
	}
	s.run(ctl, 10*time.Second, time.Millisecond)
	if s.c.Started != 2000 {
		t.Fatalf("started %d after the ramp, want 2000", s.c.Started)
	}
}

func TestMaximumFindsKnee(t *testing.T) {
	ctl := mustNew(t, Config{Kind: "maximum-rate", From: 100, Step: 100, StepTime: time.Second}, time.Minute)
	m := ctl.(*Maximum)
	s := &sim{capacity: 450}
	s.run(m, 20*time.Second, time.Millisecond)
	knee, ok := m.Knee()
	if !ok {
		t.Fatalf("no knee after 20 s; steps %v", m.Steps())
	}
	// Steps at 100..400 tps are served in full; 500 tps is capped at 450,
	// a gain of 12.5%; 600 tps gains nothing over it.
	if knee.Rate != 500 || math.Abs(knee.Throughput-450) > 5 {
		t.Fatalf("knee %+v, want rate 500 at about 450 tps; steps %v", knee, m.Steps())
	}
	if len(m.Steps()) != 6 {
		t.Fatalf("steps %v: want 6 (100 to 600 tps)", m.Steps())
	}
	// After the knee it sends at the knee's rate.
	started := s.c.Started
	s.run(m, 10*time.Second, time.Millisecond) // the fake clock restarts at 0: 10 s more of polls at t ≤ 20 s start nothing new
	if s.c.Started != started {
		t.Fatalf("started %d more on polls of past times", s.c.Started-started)
	}
	if d := m.Poll(21*time.Second, s.c); d.Start < 400 || d.Start > 600 {
		t.Fatalf("one second on, it starts %d: want about the knee's rate of 500", d.Start)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg    Config
		errHas string
	}{
		{Config{Kind: "fast"}, `rate: unknown kind "fast": want one of fixed-rate, fixed-load, linear-rate, maximum-rate`},
		{Config{Kind: "fixed-rate"}, "rate fixed-rate: tps = 0: want more than 0"},
		{Config{Kind: "fixed-load", Load: -1}, "load = -1: want at least 1"},
		{Config{Kind: "maximum-rate", StepTime: time.Millisecond}, "step_time ≥ 100ms"},
	} {
		_, err := New(tc.cfg, time.Second)
		if err == nil || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.cfg, err, tc.errHas)
		}
	}
}
