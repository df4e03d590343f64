package energy

import (
	"errors"
	"fmt"
	"time"
)

// Source names where an energy figure came from.
type Source string

const (
	// SourceRAPL is the processor's own energy counters, read through
	// Linux powercap.
	SourceRAPL Source = "rapl"
	// SourceModel is the per-core power model integrated over the
	// measured processes' CPU time.
	SourceModel Source = "model"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrNoRAPL: the powercap root holds no RAPL package zone.
	ErrNoRAPL = errors.New("energy: no RAPL meter")
	// ErrRAPLUnreadable: a RAPL zone exists but one of its files cannot
	// be read or parsed (most often permissions: energy_uj is root-only
	// since Linux 5.10).
	ErrRAPLUnreadable = errors.New("energy: RAPL unreadable")
	// ErrModel: the model's parameters are impossible.
	ErrModel = errors.New("energy: impossible model")
	// ErrMixedSources: two figures from different sources, or from the
	// model with different parameters, were to be combined.
	ErrMixedSources = errors.New("energy: mixed sources")
	// ErrTimeline: a sample log or busy timeline is out of order.
	ErrTimeline = errors.New("energy: bad timeline")
)

// Meter reads cumulative energy. Read is given the time of the reading
// (time is the caller's input, as everywhere in strand); the model needs
// it, RAPL only stamps it. A Meter is not safe for concurrent use: one
// sampling loop owns it.
type Meter interface {
	// Read returns the energy used since the meter was opened.
	Read(now time.Time) (Reading, error)
	// Source is the source of every Reading this meter returns.
	Source() Source
}

// Reading is one cumulative reading of a meter.
type Reading struct {
	At     time.Time
	Source Source
	// Joules since the meter was opened: for RAPL the package domains
	// plus the DRAM domains (the study's CPU + DRAM), for the model the
	// measured processes' cores.
	Joules float64
	// Domains is each RAPL domain's own count (RAPL only). Core and
	// uncore lie inside their package and are listed, not added.
	Domains []DomainJoules
	// Model is the model's parameters (model only).
	Model *ModelParams
}

// DomainJoules is one RAPL domain's energy since the meter was opened.
type DomainJoules struct {
	Name   string // "package-0", "package-0/core", "package-0/dram", "psys"
	Joules float64
}

// Sub returns the energy from earlier to r, labelled with its source.
// It refuses readings from different sources or model parameters, and a
// reading taken before earlier.
func (r Reading) Sub(earlier Reading) (Energy, error) {
	if err := sameSource(earlier, r); err != nil {
		return Energy{}, err
	}
	if r.At.Before(earlier.At) {
		return Energy{}, fmt.Errorf("%w: reading at %v is before the earlier one at %v", ErrTimeline, r.At, earlier.At)
	}
	return Energy{
		Source: r.Source,
		Model:  r.Model,
		Span:   Span{Duration: r.At.Sub(earlier.At), Joules: r.Joules - earlier.Joules},
	}, nil
}

// Energy is one figure: energy over a stretch of time and where it came
// from.
type Energy struct {
	Source Source
	Model  *ModelParams // the model's parameters; nil for RAPL
	Span
}

func (e Energy) String() string {
	s := fmt.Sprintf("%.3f J over %v (%.2f W, %s", e.Joules, e.Duration, e.Watts(), e.Source)
	if e.Model != nil {
		s += ": " + e.Model.String()
	}
	return s + ")"
}

// sameSource reports whether a and b may be combined: one source and,
// for the model, equal parameters.
func sameSource(a, b Reading) error {
	if a.Source != b.Source {
		return fmt.Errorf("%w: %q and %q", ErrMixedSources, a.Source, b.Source)
	}
	if a.Source == SourceModel && (a.Model == nil || b.Model == nil || *a.Model != *b.Model) {
		return fmt.Errorf("%w: model readings with parameters %v and %v", ErrMixedSources, a.Model, b.Model)
	}
	return nil
}

// Span is energy over a stretch of time.
type Span struct {
	Duration time.Duration
	Joules   float64
}

// Watts is the span's mean power, 0 for an empty span.
func (s Span) Watts() float64 {
	if s.Duration <= 0 {
		return 0
	}
	return s.Joules / s.Duration.Seconds()
}

// DefaultPowercapRoot is where Linux puts the powercap class.
const DefaultPowercapRoot = "/sys/class/powercap"

// Config chooses and configures a meter.
type Config struct {
	// Source is SourceRAPL, SourceModel, or "" for RAPL where the
	// machine has it and the model where it has none. A RAPL meter that
	// exists but cannot be read is an error, never a silent fall back.
	Source Source
	// PowercapRoot is the powercap sysfs directory; tests point it at a
	// fixture.
	PowercapRoot string
	// RAPLDomains lists domain kinds ("package", "core", "uncore",
	// "dram", "psys") that must exist. Empty requires "package" only
	// and reads the others where present.
	RAPLDomains []string
	// Model is the model's parameters; zero fields take the defaults.
	Model ModelParams
}

// EnsureDefaults fills zero fields with defaults.
func (c *Config) EnsureDefaults() {
	if c.PowercapRoot == "" {
		c.PowercapRoot = DefaultPowercapRoot
	}
	c.Model.EnsureDefaults()
}

// Validate checks the configuration without touching the machine.
func (c *Config) Validate() error {
	switch c.Source {
	case "", SourceRAPL, SourceModel:
	default:
		return fmt.Errorf("energy: source %q, want %q, %q or empty (RAPL where present, else the model)", c.Source, SourceRAPL, SourceModel)
	}
	for _, d := range c.RAPLDomains {
		if !knownKind(d) {
			return fmt.Errorf("energy: RAPL domain %q, want one of %v", d, domainKinds)
		}
	}
	if c.Source != SourceRAPL {
		return c.Model.Validate()
	}
	return nil
}

// Open returns the meter c names, started at now, measuring processes
// pids for the model (RAPL measures the whole socket whatever pids is).
// Every problem is reported here, at start.
func Open(c Config, pids []int, now time.Time) (Meter, error) {
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Source != SourceModel {
		m, err := OpenRAPL(c.PowercapRoot, c.RAPLDomains)
		if err == nil {
			return m, nil
		}
		if c.Source == SourceRAPL || !errors.Is(err, ErrNoRAPL) {
			return nil, err
		}
	}
	return OpenModel(c.Model, pids, nil, now)
}

// Label names a figure's source for tables and files: "rapl", or
// "model" with its parameters, so that no figure is shown without what
// it rests on.
func Label(s Source, p *ModelParams) string {
	if s == SourceModel && p != nil {
		return fmt.Sprintf("model (%s)", p)
	}
	return string(s)
}
