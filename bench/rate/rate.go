package rate

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Counts are what the loop has seen so far.
type Counts struct {
	Started, Completed int64
}

// Outstanding is the number started but not completed.
func (c Counts) Outstanding() int64 { return c.Started - c.Completed }

// Decision is what a Controller asks of the loop.
type Decision struct {
	Start int           // transactions to start now
	Wait  time.Duration // poll again after this, or at a completion; 0: at a completion only
}

// Controller decides when transactions start.
type Controller interface {
	Poll(elapsed time.Duration, c Counts) Decision
	// Describe renders the controller, such as "fixed-rate 500 tps".
	Describe() string
}

// maxTick bounds how long an open-loop controller sleeps, so that the loop
// sends in small bursts rather than one large one.
const maxTick = 10 * time.Millisecond

// Config selects and parameterises a controller (the YAML form of a
// round's rate).
type Config struct {
	Kind string  `yaml:"kind" json:"kind"`                     // fixed-rate, fixed-load, linear-rate, maximum-rate
	TPS  float64 `yaml:"tps,omitempty" json:"tps,omitempty"`   // fixed-rate
	Load int     `yaml:"load,omitempty" json:"load,omitempty"` // fixed-load: transactions outstanding
	// linear-rate: from From to To tps over the round's duration.
	From float64 `yaml:"from,omitempty" json:"from,omitempty"`
	To   float64 `yaml:"to,omitempty" json:"to,omitempty"`
	// maximum-rate: start at From tps, add Step tps every StepTime, stop
	// raising once a step's throughput gains less than MinGain (a
	// fraction) over the best step so far.
	Step     float64       `yaml:"step,omitempty" json:"step,omitempty"`
	StepTime time.Duration `yaml:"step_time,omitempty" json:"step_time,omitempty"`
	MinGain  float64       `yaml:"min_gain,omitempty" json:"min_gain,omitempty"`
	// fixed-rate only: Of, if set, names an earlier round of the same run,
	// and the rate is Fraction of that round's highest throughput (its
	// knee for a maximum-rate round, else its throughput), such as 90% of
	// the maximum (StreamChain's Figure 7). bench.Resolve sets TPS from it
	// before the round runs.
	Of       string  `yaml:"of,omitempty" json:"of,omitempty"`
	Fraction float64 `yaml:"fraction,omitempty" json:"fraction,omitempty"`
}

// Kinds are the controller kinds New builds.
var Kinds = []string{"fixed-rate", "fixed-load", "linear-rate", "maximum-rate"}

// New builds the controller cfg describes for a round of duration d.
func New(cfg Config, d time.Duration) (Controller, error) {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("rate %s: %s = %v: want %s", cfg.Kind, field, v, want)
	}
	switch cfg.Kind {
	case "fixed-rate":
		if !(cfg.TPS > 0) && cfg.Of != "" {
			return nil, fmt.Errorf("rate fixed-rate: a fraction of round %q, not yet resolved (bench.Resolve sets it once that round ran)", cfg.Of)
		}
		if !(cfg.TPS > 0) {
			return nil, bad("tps", cfg.TPS, "more than 0")
		}
		return &Linear{From: cfg.TPS, To: cfg.TPS, Over: d}, nil
	case "fixed-load", "":
		if cfg.Load < 1 {
			return nil, bad("load", cfg.Load, "at least 1 transaction outstanding")
		}
		return FixedLoad(cfg.Load), nil
	case "linear-rate":
		if cfg.From < 0 || !(cfg.To > 0) {
			return nil, bad("from/to", fmt.Sprintf("%g/%g", cfg.From, cfg.To), "from ≥ 0 and to > 0")
		}
		return &Linear{From: cfg.From, To: cfg.To, Over: d}, nil
	case "maximum-rate":
		m := &Maximum{From: cfg.From, Step: cfg.Step, StepTime: cfg.StepTime, MinGain: cfg.MinGain}
		m.EnsureDefaults()
		if !(m.From > 0) || !(m.Step > 0) || m.StepTime < 100*time.Millisecond || m.MinGain < 0 {
			return nil, bad("from/step/step_time/min_gain", fmt.Sprintf("%g/%g/%v/%g", m.From, m.Step, m.StepTime, m.MinGain),
				"from > 0, step > 0, step_time ≥ 100ms, min_gain ≥ 0")
		}
		return m, nil
	}
	return nil, fmt.Errorf("rate: unknown kind %q: want one of %s", cfg.Kind, strings.Join(Kinds, ", "))
}

// FixedLoad keeps N transactions outstanding (closed loop).
type FixedLoad int

// Poll starts as many as are missing and waits for a completion.
func (n FixedLoad) Poll(_ time.Duration, c Counts) Decision {
	return Decision{Start: int(max(0, int64(n)-c.Outstanding()))}
}

func (n FixedLoad) Describe() string { return fmt.Sprintf("fixed-load %d outstanding", int(n)) }

// Linear is an open-loop rate going linearly from From to To tps over
// Over (and staying at To afterwards); From = To is a fixed rate.
type Linear struct {
	From, To float64
	Over     time.Duration
}

// due is how many transactions should have started by t: the integral of
// the rate, from·t + (to−from)·t²/(2·over) while ramping.
func (l *Linear) due(t time.Duration) float64 {
	s, over := t.Seconds(), l.Over.Seconds()
	if over <= 0 || l.From == l.To {
		return l.To * s
	}
	if s <= over {
		return l.From*s + (l.To-l.From)*s*s/(2*over)
	}
	return (l.From+l.To)*over/2 + l.To*(s-over)
}

// Poll starts what is due and sleeps until the next one is.
func (l *Linear) Poll(t time.Duration, c Counts) Decision {
	n := int(max(0, math.Floor(l.due(t))-float64(c.Started)))
	rate := l.rateAt(t)
	wait := maxTick
	if rate > 0 {
		wait = min(maxTick, max(time.Duration(float64(time.Second)/rate), 50*time.Microsecond))
	}
	return Decision{Start: n, Wait: wait}
}

func (l *Linear) rateAt(t time.Duration) float64 {
	if l.Over <= 0 || t >= l.Over {
		return l.To
	}
	return l.From + (l.To-l.From)*t.Seconds()/l.Over.Seconds()
}

func (l *Linear) Describe() string {
	if l.From == l.To {
		return fmt.Sprintf("fixed-rate %g tps", l.To)
	}
	return fmt.Sprintf("linear-rate %g to %g tps", l.From, l.To)
}
