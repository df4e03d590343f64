package energy

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeMeter returns Joules = 2 W × seconds since t0, and fails on the
// read numbered failAt (from 1).
type fakeMeter struct {
	src    Source
	reads  int
	failAt int
}

func (f *fakeMeter) Source() Source { return f.src }

func (f *fakeMeter) Read(now time.Time) (Reading, error) {
	f.reads++
	if f.reads == f.failAt {
		return Reading{}, errors.New("fake: meter gone")
	}
	return Reading{At: now, Source: f.src, Joules: 2 * now.Sub(t0).Seconds()}, nil
}

func tickTimes(ns ...int) <-chan time.Time {
	c := make(chan time.Time, len(ns))
	for _, n := range ns {
		c <- ms(n)
	}
	close(c)
	return c
}

func TestSample(t *testing.T) {
	l, err := Sample(context.Background(), &fakeMeter{src: SourceRAPL}, ms(0), tickTimes(10, 20, 30))
	if err != nil {
		t.Fatal(err)
	}
	if r := l.Readings(); len(r) != 4 || !r[3].At.Equal(ms(30)) || !near(r[3].Joules, 0.06) {
		t.Fatalf("log %+v, want readings at 0, 10, 20, 30 ms ending at 0.06 J", r)
	}
	m, err := l.Overlay([]Interval{iv("validate", 10, 20)}, 3)
	if err != nil || !near(m.Busy.Joules, 0.02) || m.Busy.Duration != 10*time.Millisecond {
		t.Errorf("Overlay = %+v, %v; want 10 ms and 0.02 J busy", m, err)
	}

	// A failing meter ends sampling with its error and what came before.
	l, err = Sample(context.Background(), &fakeMeter{src: SourceRAPL, failAt: 3}, ms(0), tickTimes(10, 20, 30))
	if err == nil || len(l.Readings()) != 2 {
		t.Errorf("meter failing on read 3: %d readings, %v; want 2 and the error", len(l.Readings()), err)
	}
	// A tick that goes back in time is refused, not logged.
	l, err = Sample(context.Background(), &fakeMeter{src: SourceRAPL}, ms(0), tickTimes(10, 5))
	if !errors.Is(err, ErrTimeline) || len(l.Readings()) != 2 {
		t.Errorf("a tick back in time: %d readings, %v; want 2 and ErrTimeline", len(l.Readings()), err)
	}
	// A cancelled context ends sampling while no tick comes.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l, err = Sample(ctx, &fakeMeter{src: SourceRAPL}, ms(0), make(chan time.Time))
	if err != nil || len(l.Readings()) != 1 {
		t.Errorf("cancelled: %d readings, %v; want the start reading only", len(l.Readings()), err)
	}
}

// TestLogAddRefusesMixing: a run's log never takes a second source, so
// no figure made from it can mix two.
func TestLogAddRefusesMixing(t *testing.T) {
	var l Log
	p := ModelParams{ActiveWatts: 8.5, IdleWatts: 1.44, Cores: 2}
	if err := l.Add(Reading{At: ms(0), Source: SourceRAPL}); err != nil {
		t.Fatal(err)
	}
	if err := l.Add(Reading{At: ms(10), Source: SourceModel, Joules: 1, Model: &p}); !errors.Is(err, ErrMixedSources) {
		t.Errorf("model after RAPL: %v, want ErrMixedSources", err)
	}
	if err := l.Add(Reading{At: ms(10), Source: SourceRAPL, Joules: 1}); err != nil {
		t.Errorf("a good second reading: %v", err)
	}
	if n := len(l.Readings()); n != 2 {
		t.Errorf("%d readings, want 2 (the refused one left out)", n)
	}
}
