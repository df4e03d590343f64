package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/energy"
)

func TestParseReplayRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ReplayRate
	}{
		{"max", ReplayRate{}}, {"50%", ReplayRate{OfMax: 0.5}}, {" 25% ", ReplayRate{OfMax: 0.25}}, {"1500", ReplayRate{TPS: 1500}},
	} {
		if got, err := ParseReplayRate(tc.in); err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "0%", "-5", "fast", "2000%", "0"} {
		if _, err := ParseReplayRate(in); err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("%q: %v, want an error saying what is allowed", in, err)
		}
	}
}

// TestValidatorEnergyFigures: the study's figures from a measurement
// whose answer is known: 1000 tx, 4 s and 20 J whole, 1 s and 8 J busy.
func TestValidatorEnergyFigures(t *testing.T) {
	p := energy.ModelParams{ActiveWatts: 8.5, IdleWatts: 1.44, Cores: 2}
	re := ReplayEnergy{Source: energy.SourceModel, Model: &p, WholeS: 4, WholeJ: 20, BusyS: 1, BusyJ: 8, MeterCPUS: 0.01}
	v := newValidatorEnergy(re, 1000, 2*time.Second)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"whole W", v.WholeW, 5}, {"busy W", v.BusyW, 8}, {"J/tx", v.JPerTx, 0.02}, {"busy J/tx", v.BusyJPerTx, 0.008},
		{"tx/s/J", v.TxPerSecPerJ, 50}, {"busy tx/s/J", v.BusyTxPerSecPerJ, 125}, {"meter share", v.MeterCPUShare, 0.005},
	} {
		if diff := c.got - c.want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if v.Label != "model (active 8.50 W/core, idle 1.44 W/core, 2 cores)" {
		t.Errorf("label %q", v.Label)
	}
}

// TestBusySplit: busy joules made of a known CPU time and idle core-time
// come apart into them; RAPL figures, which have no CPU time in them,
// have no split.
func TestBusySplit(t *testing.T) {
	p := energy.ModelParams{ActiveWatts: 8.5, IdleWatts: 1.44, Cores: 2}
	// 1 s busy on 2 cores: 1.5 core-s of CPU, 0.5 idle; 2 s of CPU over
	// the whole replay, so 0.5 s outside the busy periods.
	busyJ := energy.ModelJoules(p, 1500*time.Millisecond, time.Second)
	re := ReplayEnergy{Source: energy.SourceModel, Model: &p, WholeS: 4, WholeJ: 30, BusyS: 1, BusyJ: busyJ}
	s := newValidatorEnergy(re, 1000, 2*time.Second).BusySplit
	if s == nil {
		t.Fatal("no split of model figures")
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"CPU s", s.CPUS, 1.5}, {"idle core s", s.IdleCoreS, 0.5}, {"CPU s/tx", s.CPUPerTxS, 0.0015},
		{"idle core share", s.IdleCoreShare, 1.44 * 0.5 / busyJ}, {"outside CPU s", s.OutsideCPUS, 0.5},
	} {
		if diff := c.got - c.want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	re.Source, re.Model = energy.SourceRAPL, nil
	if s := newValidatorEnergy(re, 1000, 2*time.Second).BusySplit; s != nil {
		t.Errorf("RAPL figures split into %+v, want none", s)
	}
}

// TestRepeatRates: rounds alternate direction, so that a steady drift
// over the run weighs on every rate alike.
func TestRepeatRates(t *testing.T) {
	a, b, c := ReplayRate{OfMax: 1}, ReplayRate{OfMax: 0.5}, ReplayRate{OfMax: 0.25}
	got := RepeatRates([]ReplayRate{a, b, c}, 3)
	want := []ReplayRate{a, b, c, c, b, a, a, b, c}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	// Under a linear drift d per replay, each rate's mean position is
	// the same, so the drift adds the same to every rate's mean.
	pos := map[ReplayRate]int{}
	for i, r := range RepeatRates([]ReplayRate{a, b, c}, 4) {
		pos[r] += i
	}
	if pos[a] != pos[b] || pos[b] != pos[c] {
		t.Errorf("positions %v: an even number of rounds should give every rate the same mean position", pos)
	}
	if got := RepeatRates([]ReplayRate{a, b}, 1); len(got) != 2 {
		t.Errorf("one round: %v", got)
	}
}
