package energy

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/strand-ledger/strand/internal/proccpu"
)

// Defaults of the model, from the energy study (Santoso and Javaid,
// "Improving Energy Efficiency of Permissioned Blockchains Using FPGAs"):
// its servers are Intel Xeon Silver 4114 (10 cores, 2.2 GHz, 85 W TDP on
// Intel's product sheet).
const (
	// DefaultIdleWatts is an idle core's power: the study's regression of
	// socket power on active and idle core counts (§III-B2) gives 1.44 W.
	DefaultIdleWatts = 1.44
	// DefaultCoreTDPWatts is the study CPU's TDP shared among its cores,
	// 85 W / 10.
	DefaultCoreTDPWatts = 85.0 / 10
	// DefaultActiveWatts is a busy core's power: the per-core TDP, the
	// most a core and its share of the uncore draw at sustained full
	// load. It errs high, so a modelled figure is a ceiling, not a
	// measurement.
	DefaultActiveWatts = DefaultCoreTDPWatts
)

// ModelParams are the model's parameters. They travel with every figure
// the model makes.
type ModelParams struct {
	// ActiveWatts is one core's power while a measured process runs on it.
	ActiveWatts float64 `yaml:"active_watts" json:"active_watts"`
	// IdleWatts is one core's power while idle.
	IdleWatts float64 `yaml:"idle_watts" json:"idle_watts"`
	// Cores is how many cores the measured processes may use; their
	// idle time is charged at IdleWatts. The study counts only the
	// peer's provisioned cores (it subtracts the unused cores' idle
	// power), so set this to the peer's CPU quota where it has one.
	Cores int `yaml:"cores,omitempty" json:"cores"`
}

// EnsureDefaults fills zero fields: the study's figures, and this
// machine's core count.
func (p *ModelParams) EnsureDefaults() {
	if p.ActiveWatts == 0 {
		p.ActiveWatts = DefaultActiveWatts
	}
	if p.IdleWatts == 0 {
		p.IdleWatts = DefaultIdleWatts
	}
	if p.Cores == 0 {
		p.Cores = runtime.NumCPU()
	}
}

// Validate refuses impossible parameters: power that is not a finite
// number, negative, zero while active, or higher idle than active (which
// would make energy fall as work rises); cores below one.
func (p ModelParams) Validate() error {
	for _, f := range []struct {
		field, name string
		w           float64
	}{{"active_watts", "active", p.ActiveWatts}, {"idle_watts", "idle", p.IdleWatts}} {
		if math.IsNaN(f.w) || math.IsInf(f.w, 0) || f.w < 0 {
			return fmt.Errorf("%w: %s: %s power per core is %v W, want a finite number ≥ 0", ErrModel, f.field, f.name, f.w)
		}
	}
	if p.ActiveWatts == 0 {
		return fmt.Errorf("%w: active_watts: active power per core is 0 W, want > 0", ErrModel)
	}
	if p.IdleWatts > p.ActiveWatts {
		return fmt.Errorf("%w: idle_watts: idle power per core %v W is above active %v W, want idle ≤ active", ErrModel, p.IdleWatts, p.ActiveWatts)
	}
	if p.Cores < 1 {
		return fmt.Errorf("%w: cores: %d cores, want ≥ 1", ErrModel, p.Cores)
	}
	return nil
}

func (p ModelParams) String() string {
	return fmt.Sprintf("active %.2f W/core, idle %.2f W/core, %d cores", p.ActiveWatts, p.IdleWatts, p.Cores)
}

// CPUReader returns the CPU time process pid has used; pid 0 is this
// process.
type CPUReader func(pid int) (time.Duration, error)

// ProcessCPU is the CPUReader of the running system: /proc/PID/stat, and
// getrusage for pid 0.
func ProcessCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return proccpu.Self()
	}
	return proccpu.Process(pid)
}

// Model is the meter where no counter exists. Over the time t since it
// opened, with B the core-seconds the measured processes ran and C the
// cores they may use:
//
//	E = ActiveWatts·B + IdleWatts·max(0, C·t − B)
//
// The clamp covers B above C·t, which /proc's 10 ms ticks allow. Because
// IdleWatts ≤ ActiveWatts, E never falls as t and B grow.
type Model struct {
	p     ModelParams
	pids  []int
	cpu   CPUReader
	start time.Time
	cpu0  []time.Duration
}

// OpenModel starts a model meter at now over processes pids (0 is this
// process), reading CPU time with cpu (nil: ProcessCPU). p's zero fields
// take the defaults; impossible parameters, no processes, or a process
// whose CPU time cannot be read are errors.
func OpenModel(p ModelParams, pids []int, cpu CPUReader, now time.Time) (*Model, error) {
	p.EnsureDefaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("energy: the model measures no processes, want at least one PID")
	}
	if cpu == nil {
		cpu = ProcessCPU
	}
	m := &Model{p: p, pids: append([]int(nil), pids...), cpu: cpu, start: now}
	for _, pid := range pids {
		c, err := cpu(pid)
		if err != nil {
			return nil, fmt.Errorf("energy: model: %w", err)
		}
		m.cpu0 = append(m.cpu0, c)
	}
	return m, nil
}

// Params returns the model's parameters, defaults filled in.
func (m *Model) Params() ModelParams { return m.p }

// Source is SourceModel.
func (m *Model) Source() Source { return SourceModel }

// Read returns the modelled energy from the meter's start to now.
func (m *Model) Read(now time.Time) (Reading, error) {
	if now.Before(m.start) {
		return Reading{}, fmt.Errorf("%w: model read at %v, before its start at %v", ErrTimeline, now, m.start)
	}
	var busy time.Duration
	for i, pid := range m.pids {
		c, err := m.cpu(pid)
		if err != nil {
			return Reading{}, fmt.Errorf("energy: model: %w", err)
		}
		if c < m.cpu0[i] {
			return Reading{}, fmt.Errorf("%w: process %d's CPU time fell from %v to %v (a new process with the same PID?)", ErrTimeline, pid, m.cpu0[i], c)
		}
		busy += c - m.cpu0[i]
	}
	p := m.p
	return Reading{At: now, Source: SourceModel, Joules: ModelJoules(p, busy, now.Sub(m.start)), Model: &p}, nil
}

// ModelJoules is the model's formula: the energy of p.Cores cores over
// wall time of which the measured processes ran busy core-time.
func ModelJoules(p ModelParams, busy, wall time.Duration) float64 {
	b := busy.Seconds()
	idle := max(0, float64(p.Cores)*wall.Seconds()-b)
	return p.ActiveWatts*b + p.IdleWatts*idle
}
