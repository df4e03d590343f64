package energy

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenChoosesSource: with no source named, Open takes RAPL where the
// machine has it and the model only where it has none at all; RAPL that
// is present but broken is an error, not a fall back.
func TestOpenChoosesSource(t *testing.T) {
	pid := []int{0}
	m, err := Open(Config{PowercapRoot: powercap(t, "powercap.txt")}, pid, t0)
	if err != nil || m.Source() != SourceRAPL {
		t.Fatalf("auto over a RAPL tree: %v, %v; want the RAPL meter", m, err)
	}
	absent := filepath.Join(t.TempDir(), "powercap")
	m, err = Open(Config{PowercapRoot: absent}, pid, t0)
	if err != nil || m.Source() != SourceModel {
		t.Fatalf("auto without powercap: %v, %v; want the model", m, err)
	}
	if _, err := Open(Config{Source: SourceRAPL, PowercapRoot: absent}, pid, t0); !errors.Is(err, ErrNoRAPL) {
		t.Errorf("rapl named without powercap: %v, want ErrNoRAPL", err)
	}
	broken := powercap(t, "powercap.txt")
	write(t, broken, dram0+"/energy_uj", "garbage")
	m, err = Open(Config{PowercapRoot: broken}, pid, t0)
	if !errors.Is(err, ErrRAPLUnreadable) || m != nil {
		t.Errorf("auto over a broken RAPL tree: %v, %v; want ErrRAPLUnreadable and no meter", m, err)
	}
	m, err = Open(Config{Source: SourceModel, PowercapRoot: powercap(t, "powercap.txt")}, pid, t0)
	if err != nil || m.Source() != SourceModel {
		t.Errorf("model named on a RAPL machine: %v, %v; want the model", m, err)
	}
	if _, err := Open(Config{PowercapRoot: absent, Model: ModelParams{ActiveWatts: 2, IdleWatts: 3}}, pid, t0); !errors.Is(err, ErrModel) {
		t.Errorf("auto falling back to an impossible model: %v, want ErrModel", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		c     Config
		names string
	}{
		{Config{Source: "wall"}, `source "wall"`},
		{Config{RAPLDomains: []string{"package", "gpu"}}, `domain "gpu"`},
		{Config{Source: SourceModel, Model: ModelParams{ActiveWatts: -4}}, "-4 W"},
	} {
		c.c.EnsureDefaults()
		if err := c.c.Validate(); err == nil || !strings.Contains(err.Error(), c.names) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", c.c, err, c.names)
		}
	}
	// A model nobody will use is not checked when RAPL is required.
	c := Config{Source: SourceRAPL, Model: ModelParams{ActiveWatts: -4}}
	if err := c.Validate(); err != nil {
		t.Errorf("RAPL with an unused bad model: %v", err)
	}
}

func TestReadingSub(t *testing.T) {
	p := ModelParams{ActiveWatts: 8.5, IdleWatts: 1.44, Cores: 2}
	q := p
	q.IdleWatts = 1
	a := Reading{At: t0, Source: SourceRAPL, Joules: 10}
	b := Reading{At: t0.Add(2 * time.Second), Source: SourceRAPL, Joules: 30}
	e, err := b.Sub(a)
	if err != nil || e.Duration != 2*time.Second || e.Joules != 20 || e.Watts() != 10 || e.Source != SourceRAPL || e.Model != nil {
		t.Errorf("Sub = %+v, %v; want 2 s, 20 J, 10 W from rapl", e, err)
	}
	if got, want := e.String(), "20.000 J over 2s (10.00 W, rapl)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if _, err := a.Sub(b); !errors.Is(err, ErrTimeline) {
		t.Errorf("a reading minus a later one: %v, want ErrTimeline", err)
	}
	m1 := Reading{At: t0.Add(time.Second), Source: SourceModel, Joules: 3, Model: &p}
	m2 := Reading{At: t0.Add(2 * time.Second), Source: SourceModel, Joules: 5, Model: &q}
	if _, err := m1.Sub(a); !errors.Is(err, ErrMixedSources) {
		t.Errorf("model minus RAPL: %v, want ErrMixedSources", err)
	}
	if _, err := m2.Sub(m1); !errors.Is(err, ErrMixedSources) {
		t.Errorf("models with different idle power: %v, want ErrMixedSources", err)
	}
	m0 := Reading{At: t0, Source: SourceModel, Joules: 1, Model: &q}
	e, err = m2.Sub(m0)
	if err != nil || e.Model == nil || *e.Model != q || e.String() != "4.000 J over 2s (2.00 W, model: active 8.50 W/core, idle 1.00 W/core, 2 cores)" {
		t.Errorf("model Sub = %v, %v; want 4 J labelled with its parameters", e, err)
	}
	if _, err := m1.Sub(Reading{At: t0, Source: SourceModel}); !errors.Is(err, ErrMixedSources) {
		t.Errorf("a model reading without parameters: %v, want ErrMixedSources", err)
	}
}

func TestMetricsString(t *testing.T) {
	p := ModelParams{ActiveWatts: 8.5, IdleWatts: 1.44, Cores: 4}
	m := Metrics{
		Source:      SourceModel,
		Model:       &p,
		Txs:         1000,
		Whole:       Span{Duration: 10 * time.Second, Joules: 500},
		Busy:        Span{Duration: 2 * time.Second, Joules: 200},
		BusyOutside: 30 * time.Millisecond,
	}
	got := m.String()
	for _, want := range []string{
		"energy (model: active 8.50 W/core, idle 1.44 W/core, 4 cores), 1000 tx",
		"whole    10.000 s     500.000 J     50.00 W       100.0 tx/s     2.000 tx/s/J",
		"busy      2.000 s     200.000 J    100.00 W       500.0 tx/s     5.000 tx/s/J",
		"idle      8.000 s     300.000 J     37.50 W",
		"outside the energy log: 30ms",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("String() =\n%s\nwant a line containing %q", got, want)
		}
	}
	r := Metrics{Source: SourceRAPL, Whole: Span{Duration: time.Second, Joules: 1}}
	if s := r.String(); !strings.HasPrefix(s, "energy (rapl), 0 tx") || strings.Contains(s, "outside") {
		t.Errorf("RAPL String() = %q", s)
	}
	if m.TxPerSecPerJoule(Span{}) != 0 || m.TxPerSec(Span{}) != 0 || (Span{}).Watts() != 0 {
		t.Error("an empty span gives a non-zero rate")
	}
}
