package energy

import (
	"fmt"
	"strings"
	"time"
)

// Metrics is the energy of a run: the whole interval beside its busy
// periods, the source of both, and the transactions committed.
type Metrics struct {
	Source Source
	Model  *ModelParams // the model's parameters; nil for RAPL
	Txs    int64
	Whole  Span
	Busy   Span
	// BusyOutside is busy time the energy log did not cover.
	BusyOutside time.Duration
}

// Idle is the whole interval less its busy periods.
func (m Metrics) Idle() Span {
	return Span{Duration: m.Whole.Duration - m.Busy.Duration, Joules: m.Whole.Joules - m.Busy.Joules}
}

// TxPerSecPerJoule is the study's efficiency figure over span s: the
// throughput (transactions per second of s) per watt of s's mean power.
// That is transactions per joule, so it does not grow or shrink with the
// length of the run. It is 0 where s holds no time or no energy.
func (m Metrics) TxPerSecPerJoule(s Span) float64 {
	if s.Duration <= 0 || s.Joules <= 0 {
		return 0
	}
	return float64(m.Txs) / s.Joules
}

// TxPerSec is the throughput over span s, 0 for an empty span.
func (m Metrics) TxPerSec(s Span) float64 {
	if s.Duration <= 0 {
		return 0
	}
	return float64(m.Txs) / s.Duration.Seconds()
}

func (m Metrics) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "energy (%s", m.Source)
	if m.Model != nil {
		fmt.Fprintf(&b, ": %s", m.Model)
	}
	fmt.Fprintf(&b, "), %d tx\n", m.Txs)
	row := func(name string, s Span, eff bool) {
		fmt.Fprintf(&b, "  %-5s %9.3f s %11.3f J %9.2f W", name, s.Duration.Seconds(), s.Joules, s.Watts())
		if eff {
			fmt.Fprintf(&b, " %11.1f tx/s %9.3f tx/s/J", m.TxPerSec(s), m.TxPerSecPerJoule(s))
		}
		b.WriteByte('\n')
	}
	row("whole", m.Whole, true)
	row("busy", m.Busy, true)
	row("idle", m.Idle(), false)
	if m.BusyOutside > 0 {
		fmt.Fprintf(&b, "  busy time outside the energy log: %v\n", m.BusyOutside)
	}
	return b.String()
}
