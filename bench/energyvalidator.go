package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/strand-ledger/strand/energy"
)

// ReplayRate is how fast a replay delivers blocks: TPS transactions per
// second, or OfMax times the full-speed replay's throughput; the zero
// value is full speed.
type ReplayRate struct {
	TPS   float64
	OfMax float64
}

// ParseReplayRate parses "max", "N%" (of the full-speed replay's
// throughput) or a rate in tx/s.
func ParseReplayRate(s string) (ReplayRate, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return ReplayRate{}, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || !(f > 0 && f <= 1000) {
			return ReplayRate{}, fmt.Errorf("replay rate %q: want a percentage of the full-speed throughput above 0%% and at most 1000%%", s)
		}
		return ReplayRate{OfMax: f / 100}, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0 && f <= 1e7) {
		return ReplayRate{}, fmt.Errorf("replay rate %q: want max, N%% of the full-speed throughput, or tx/s above 0 and at most 10000000", s)
	}
	return ReplayRate{TPS: f}, nil
}

// IsMax reports whether r is full speed.
func (r ReplayRate) IsMax() bool { return r.TPS == 0 && r.OfMax == 0 }

// String names the rate; tps is what it resolved to.
func (r ReplayRate) String(tps float64) string {
	switch {
	case r.OfMax > 0:
		return fmt.Sprintf("%g%% of max (%.0f tx/s)", 100*r.OfMax, tps)
	case r.TPS > 0:
		return fmt.Sprintf("%.0f tx/s", r.TPS)
	}
	return "max"
}

// RepeatRates returns rates replayed n times in rounds, every other
// round in reverse order: 100%,50%,25% three times is 100%,50%,25%,
// 25%,50%,100%, 100%,50%,25%. Interleaving makes the other tenants of a
// shared machine weigh on every rate alike; reversing makes a steady
// drift of the machine's speed over the run (seen on the development
// machine: a saturated replay at the end of one run took 22% more CPU
// per transaction than one at its start) land on every rate alike too:
// with an even n every rate's mean position in the run is the same,
// where a fixed order always gives the last rate of a round the later
// machine. n < 2 returns rates.
func RepeatRates(rates []ReplayRate, n int) []ReplayRate {
	if n < 2 {
		return rates
	}
	out := make([]ReplayRate, 0, n*len(rates))
	for k := 0; k < n; k++ {
		for i := range rates {
			j := i
			if k%2 == 1 {
				j = len(rates) - 1 - i
			}
			out = append(out, rates[j])
		}
	}
	return out
}

// ValidatorEnergy is a validator run's energy: the replay's measurement
// and the study's figures over the whole replay and over its busy
// periods. Every figure is from Source, labelled by Label.
type ValidatorEnergy struct {
	ReplayEnergy
	Label      string  `json:"label"`
	WholeW     float64 `json:"whole_w"`
	BusyW      float64 `json:"busy_w"`
	JPerTx     float64 `json:"j_per_tx"`
	BusyJPerTx float64 `json:"busy_j_per_tx"`
	// TxPerSecPerJ is the study's efficiency, tx/s per watt: transactions
	// per joule.
	TxPerSecPerJ     float64 `json:"tx_per_s_per_j"`
	BusyTxPerSecPerJ float64 `json:"busy_tx_per_s_per_j"`
	// ValidationTxPerSecPerJ is over the study's own busy time
	// (ReplayEnergy.ValidationS: the ledger write excluded, §III-D).
	ValidationTxPerSecPerJ float64 `json:"validation_tx_per_s_per_j"`
	// MeterCPUShare is the meter's CPU over the peer process's CPU
	// during the replay.
	MeterCPUShare float64 `json:"meter_cpu_share"`
	// BusySplit, for the model only, is what the busy joules are made
	// of.
	BusySplit *BusySplit `json:"busy_split,omitempty"`
}

// BusySplit takes the model's busy joules apart: the model is affine in
// CPU time and wall time (E = (active−idle)·B + idle·C·t), and Overlay
// charges each step of the log in proportion to its busy part, so the
// busy joules determine the CPU time charged to busy periods exactly.
// Of a busy figure that falls as the rate falls, it says whether the
// peer spent more CPU per transaction inside its busy periods, or left
// more of its cores idle inside them (a lone block waiting on its fsync,
// one core validating, the second verify worker not yet awake: work a
// saturated pipeline overlaps with the next block's).
type BusySplit struct {
	// CPUS is the CPU time charged to busy periods; IdleCoreS, the
	// peer's core-time left idle inside them (cores × busy s − CPUS).
	CPUS      float64 `json:"cpu_s"`
	IdleCoreS float64 `json:"idle_core_s"`
	// CPUPerTxS is CPUS per transaction.
	CPUPerTxS float64 `json:"cpu_per_tx_s"`
	// IdleCoreShare is the idle cores' part of the busy joules.
	IdleCoreShare float64 `json:"idle_core_share"`
	// OutsideCPUS is the peer's CPU outside its busy periods, excluded
	// with the idle time: the process's CPU over the replay less CPUS.
	OutsideCPUS float64 `json:"outside_cpu_s"`
}

// busySplit is BusySplit for model figures, nil for any other source.
func busySplit(re ReplayEnergy, txs int, cpu time.Duration) *BusySplit {
	if re.Source != energy.SourceModel || re.Model == nil || re.BusyJ <= 0 || re.Model.ActiveWatts <= re.Model.IdleWatts {
		return nil
	}
	p := re.Model
	core := float64(p.Cores) * re.BusyS
	b := (re.BusyJ - p.IdleWatts*core) / (p.ActiveWatts - p.IdleWatts)
	b = min(max(b, 0), core) // rounding; the model clamps B to C·t
	s := &BusySplit{CPUS: b, IdleCoreS: core - b, IdleCoreShare: p.IdleWatts * (core - b) / re.BusyJ, OutsideCPUS: cpu.Seconds() - b}
	if txs > 0 {
		s.CPUPerTxS = b / float64(txs)
	}
	return s
}

func newValidatorEnergy(re ReplayEnergy, txs int, cpu time.Duration) *ValidatorEnergy {
	m := energy.Metrics{
		Source: re.Source, Model: re.Model, Txs: int64(txs),
		Whole: energy.Span{Duration: time.Duration(re.WholeS * float64(time.Second)), Joules: re.WholeJ},
		Busy:  energy.Span{Duration: time.Duration(re.BusyS * float64(time.Second)), Joules: re.BusyJ},
	}
	v := &ValidatorEnergy{
		ReplayEnergy: re, Label: energy.Label(re.Source, re.Model),
		WholeW: m.Whole.Watts(), BusyW: m.Busy.Watts(),
		TxPerSecPerJ: m.TxPerSecPerJoule(m.Whole), BusyTxPerSecPerJ: m.TxPerSecPerJoule(m.Busy),
		ValidationTxPerSecPerJ: m.TxPerSecPerJoule(energy.Span{
			Duration: time.Duration(re.ValidationS * float64(time.Second)), Joules: re.ValidationJ}),
	}
	if txs > 0 {
		v.JPerTx, v.BusyJPerTx = re.WholeJ/float64(txs), re.BusyJ/float64(txs)
	}
	if cpu > 0 {
		v.MeterCPUShare = re.MeterCPUS / cpu.Seconds()
	}
	v.BusySplit = busySplit(re, txs, cpu)
	return v
}
