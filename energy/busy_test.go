package energy

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func iv(stage string, from, to int) Interval {
	return Interval{Stage: stage, Start: ms(from), End: ms(to)}
}

func TestUnion(t *testing.T) {
	got, err := Union([]Interval{
		iv("persist", 90, 100),
		iv("verify", 0, 30),
		iv("validate", 20, 50), // overlaps verify
		iv("persist", 50, 60),  // touches validate
		iv("verify", 5, 10),    // inside verify
		iv("validate", 70, 70), // empty
		iv("validate", 80, 95), // overlaps persist's later interval
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{0, 60}, {80, 100}}
	if len(got) != len(want) {
		t.Fatalf("Union = %v, want %v", got, want)
	}
	for i, w := range want {
		if !got[i].Start.Equal(ms(w[0])) || !got[i].End.Equal(ms(w[1])) {
			t.Errorf("period %d = %v–%v, want %d–%d ms", i, got[i].Start.Sub(t0), got[i].End.Sub(t0), w[0], w[1])
		}
	}
	_, err = Union([]Interval{iv("verify", 0, 10), iv("validate", 30, 20)})
	if !errors.Is(err, ErrTimeline) || !strings.Contains(err.Error(), "interval 1 (validate)") {
		t.Errorf("an interval ending before it starts: %v, want ErrTimeline naming interval 1 (validate)", err)
	}
}

// constLog is a 10 ms log of a meter that draws idleW, and busyW during
// the periods of busy (which must fall on 10 ms boundaries).
func constLog(n int, idleW, busyW float64, busy []Interval) []Reading {
	log := []Reading{{At: ms(0), Source: SourceRAPL}}
	for i := 1; i <= n; i++ {
		w := idleW
		for _, b := range busy {
			if !ms(10*i-10).Before(b.Start) && !ms(10*i).After(b.End) {
				w = busyW
			}
		}
		log = append(log, Reading{At: ms(10 * i), Source: SourceRAPL, Joules: log[i-1].Joules + w*0.01})
	}
	return log
}

// TestOverlaySynthetic: a peer that draws 100 W while a stage works and
// 10 W between blocks, over a second, with stages that overlap. The busy
// figure is the union's time at 100 W, not the stages' sum.
func TestOverlaySynthetic(t *testing.T) {
	busy := []Interval{
		iv("verify", 100, 200), iv("validate", 150, 250), iv("persist", 250, 300), // block 1: 200 ms
		iv("verify", 600, 650), iv("validate", 600, 650), iv("persist", 640, 700), // block 2: 100 ms
	}
	log := constLog(100, 10, 100, busy)
	m, err := Overlay(log, busy, 600)
	if err != nil {
		t.Fatal(err)
	}
	if m.Whole.Duration != time.Second || !near(m.Whole.Joules, 0.3*100+0.7*10) {
		t.Errorf("whole = %+v, want 1 s and 37 J", m.Whole)
	}
	if m.Busy.Duration != 300*time.Millisecond || !near(m.Busy.Joules, 30) {
		t.Errorf("busy = %+v, want 300 ms and 30 J", m.Busy)
	}
	if idle := m.Idle(); idle.Duration != 700*time.Millisecond || !near(idle.Joules, 7) || !near(idle.Watts(), 10) {
		t.Errorf("idle = %+v (%v W), want 700 ms, 7 J, 10 W", idle, idle.Watts())
	}
	if !near(m.Busy.Watts(), 100) || m.BusyOutside != 0 {
		t.Errorf("busy power %v W, outside %v; want 100 W, 0", m.Busy.Watts(), m.BusyOutside)
	}
	if !near(m.TxPerSec(m.Busy), 2000) || !near(m.TxPerSecPerJoule(m.Busy), 20) || !near(m.TxPerSecPerJoule(m.Whole), 600/37.0) {
		t.Errorf("busy %v tx/s %v tx/s/J, whole %v tx/s/J; want 2000, 20, %v", m.TxPerSec(m.Busy), m.TxPerSecPerJoule(m.Busy), m.TxPerSecPerJoule(m.Whole), 600/37.0)
	}
}

// TestOverlayPartialStep: an interval that covers part of a log step
// takes that part of the step's energy, and busy time beyond the log is
// reported, not counted.
func TestOverlayPartialStep(t *testing.T) {
	log := []Reading{
		{At: ms(0), Source: SourceRAPL, Joules: 0},
		{At: ms(10), Source: SourceRAPL, Joules: 1},
		{At: ms(20), Source: SourceRAPL, Joules: 3},
	}
	m, err := Overlay(log, []Interval{iv("verify", 7, 12), iv("persist", -5, 1), iv("persist", 18, 40)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Step 1: 1 ms (0–1) + 3 ms (7–10) of 10 → 0.4 J; step 2: 2 ms
	// (10–12) + 2 ms (18–20) of 10 → 0.8 J.
	if m.Busy.Duration != 8*time.Millisecond || !near(m.Busy.Joules, 1.2) {
		t.Errorf("busy = %+v, want 8 ms and 1.2 J", m.Busy)
	}
	if m.BusyOutside != 25*time.Millisecond {
		t.Errorf("BusyOutside = %v, want 25ms (5 before the log, 20 after)", m.BusyOutside)
	}
}

// TestOverlayOracle compares Overlay with a brute-force integral over
// random logs and random overlapping stages: power is constant within a
// log step, so the busy energy is exactly ∫ p(t) over the union,
// summed here microsecond by microsecond.
func TestOverlayOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	us := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Microsecond) }
	for round := range 30 {
		steps := 2 + rng.IntN(20)
		var at []int // log times in µs
		watts := []float64{}
		log := []Reading{{At: us(0), Source: SourceRAPL}}
		at = append(at, 0)
		for i := 1; i <= steps; i++ {
			at = append(at, at[i-1]+1+rng.IntN(3000))
			watts = append(watts, rng.Float64()*200)
			log = append(log, Reading{At: us(at[i]), Source: SourceRAPL, Joules: log[i-1].Joules + watts[i-1]*float64(at[i]-at[i-1])/1e6})
		}
		end := at[steps]
		var busy []Interval
		for range rng.IntN(12) {
			a := rng.IntN(end+2000) - 1000
			busy = append(busy, Interval{Stage: "stage", Start: us(a), End: us(a + rng.IntN(end/3+1))})
		}
		inBusy := func(u int) bool {
			for _, b := range busy {
				if !us(u).Before(b.Start) && us(u).Before(b.End) {
					return true
				}
			}
			return false
		}
		var wantJ float64
		var wantT, outside int
		step := 0
		for u := -1000; u < end+1000+end/3+1; u++ { // every interval lies in here
			if !inBusy(u) {
				continue
			}
			if u < 0 || u >= end {
				outside++
				continue
			}
			for at[step+1] <= u {
				step++
			}
			wantT++
			wantJ += watts[step] / 1e6
		}
		m, err := Overlay(log, busy, 0)
		if err != nil {
			t.Fatal(err)
		}
		if m.Busy.Duration != time.Duration(wantT)*time.Microsecond || math.Abs(m.Busy.Joules-wantJ) > 1e-9 || m.BusyOutside != time.Duration(outside)*time.Microsecond {
			t.Fatalf("round %d: busy %v %v J outside %v; oracle %d µs %v J outside %d µs", round, m.Busy.Duration, m.Busy.Joules, m.BusyOutside, wantT, wantJ, outside)
		}
		if m.Busy.Joules > m.Whole.Joules+1e-12 || m.Busy.Duration > m.Whole.Duration {
			t.Fatalf("round %d: busy %+v exceeds whole %+v", round, m.Busy, m.Whole)
		}
	}
}

func TestOverlayRefuses(t *testing.T) {
	model := ModelParams{ActiveWatts: 8.5, IdleWatts: 1.44, Cores: 4}
	other := model
	other.Cores = 8
	r := func(n int, src Source, j float64, p *ModelParams) Reading {
		return Reading{At: ms(n), Source: src, Joules: j, Model: p}
	}
	for _, c := range []struct {
		name  string
		log   []Reading
		busy  []Interval
		want  error
		names string
	}{
		{"one reading", []Reading{r(0, SourceRAPL, 0, nil)}, nil, ErrTimeline, "1 readings"},
		{"rapl then model", []Reading{r(0, SourceRAPL, 0, nil), r(10, SourceModel, 1, &model)}, nil, ErrMixedSources, `"rapl" and "model"`},
		{"two models", []Reading{r(0, SourceModel, 0, &model), r(10, SourceModel, 1, &other)}, nil, ErrMixedSources, "8 cores"},
		{"out of order", []Reading{r(0, SourceRAPL, 0, nil), r(20, SourceRAPL, 1, nil), r(10, SourceRAPL, 2, nil)}, nil, ErrTimeline, "reading 2"},
		{"same time", []Reading{r(0, SourceRAPL, 0, nil), r(0, SourceRAPL, 1, nil)}, nil, ErrTimeline, "reading 1"},
		{"energy falls", []Reading{r(0, SourceRAPL, 5, nil), r(10, SourceRAPL, 4, nil)}, nil, ErrTimeline, "4 J, below reading 0's 5 J"},
		{"bad interval", []Reading{r(0, SourceRAPL, 0, nil), r(10, SourceRAPL, 1, nil)}, []Interval{iv("persist", 5, 2)}, ErrTimeline, "(persist)"},
	} {
		_, err := Overlay(c.log, c.busy, 0)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.names) {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.want, c.names)
		}
	}
	// One model with equal parameters in separate values is one source.
	same := model
	if _, err := Overlay([]Reading{r(0, SourceModel, 0, &model), r(10, SourceModel, 1, &same)}, nil, 0); err != nil {
		t.Errorf("a model log with equal parameters: %v", err)
	}
}
