package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/strand-ledger/strand/energy"
)

// RunEnergy is a round's energy: per node process and in total, from one
// source. The model gives both (from each process's CPU time); RAPL
// measures the socket, so it gives only the total, which then includes
// everything else the machine ran.
type RunEnergy struct {
	Source energy.Source       `json:"source"`
	Model  *energy.ModelParams `json:"model,omitempty"`
	// Label is the source with the model's parameters, for reports.
	Label string       `json:"label"`
	Procs []ProcEnergy `json:"processes,omitempty"`
	Total ProcEnergy   `json:"total"`
	Note  string       `json:"note,omitempty"`
}

// ProcEnergy is one process's (or the total's) energy over the round,
// with the round's committed transactions.
type ProcEnergy struct {
	Name         string  `json:"name"`
	Joules       float64 `json:"joules"`
	Watts        float64 `json:"watts"`
	JPerTx       float64 `json:"j_per_tx"`
	TxPerSecPerJ float64 `json:"tx_per_s_per_j"`
}

// loadGenerator is the name the round gives its own process beside a
// --net network's nodes; it is not part of the network's energy.
const loadGenerator = "load generator"

// roundMeter measures a round: a RAPL reading before and after it, or
// nothing during it for the model, which needs only the processes' CPU
// time that the round reports anyway.
type roundMeter struct {
	cfg  energy.Config
	rapl *energy.RAPL
	r0   energy.Reading
	err  error
}

// openRoundMeter chooses the source once, before the round: RAPL where
// the machine has it (unless the model is asked for), else the model.
// RAPL that is present but unreadable is an error, never a silent model.
func openRoundMeter(cfg energy.Config) (*roundMeter, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &roundMeter{cfg: cfg}
	if cfg.Source != energy.SourceModel {
		r, err := energy.OpenRAPL(cfg.PowercapRoot, cfg.RAPLDomains)
		switch {
		case err == nil:
			m.rapl = r
		case cfg.Source == energy.SourceRAPL || !errors.Is(err, energy.ErrNoRAPL):
			return nil, err
		}
	}
	return m, nil
}

func (m *roundMeter) begin() {
	if m.rapl != nil {
		m.r0, m.err = m.rapl.Read(time.Now())
	}
}

// end returns the round's energy from res's elapsed time, processes' CPU
// and committed transactions.
func (m *roundMeter) end(res *Result) (*RunEnergy, error) {
	t := time.Duration(res.ElapsedS * float64(time.Second))
	txs := res.Committed
	fig := func(name string, j float64) ProcEnergy {
		p := ProcEnergy{Name: name, Joules: j}
		if t > 0 {
			p.Watts = j / t.Seconds()
		}
		if txs > 0 && j > 0 {
			p.JPerTx, p.TxPerSecPerJ = j/float64(txs), float64(txs)/j
		}
		return p
	}
	if m.rapl != nil {
		if m.err != nil {
			return nil, m.err
		}
		r1, err := m.rapl.Read(time.Now())
		if err != nil {
			return nil, err
		}
		e, err := r1.Sub(m.r0)
		if err != nil {
			return nil, err
		}
		return &RunEnergy{Source: energy.SourceRAPL, Label: energy.Label(energy.SourceRAPL, nil),
			Total: fig("socket (RAPL: packages + DRAM)", e.Joules),
			Note:  "RAPL measures the sockets, not processes: no per-process figures, and the total includes everything the machine ran"}, nil
	}
	p := m.cfg.Model
	total := p
	total.Cores = res.Usage.Cores // the network shares the machine's cores
	if total.Cores < 1 {
		total.Cores = p.Cores
	}
	re := &RunEnergy{Source: energy.SourceModel, Model: &p, Label: energy.Label(energy.SourceModel, &p)}
	var busy time.Duration
	for _, u := range res.Usage.Procs {
		if u.Err != "" {
			return nil, fmt.Errorf("bench: energy of %s: its CPU time could not be read: %s", u.Name, u.Err)
		}
		b := time.Duration(u.CPUPercent / 100 * float64(t))
		re.Procs = append(re.Procs, fig(u.Name, energy.ModelJoules(p, b, t)))
		if u.Name != loadGenerator {
			busy += b
		}
	}
	re.Total = fig(fmt.Sprintf("network (%d cores)", total.Cores), energy.ModelJoules(total, busy, t))
	re.Note = fmt.Sprintf("each process is charged as if it had %d cores to itself, so processes do not add up to the network's total, which counts the machine's %d cores once and leaves out the load generator", p.Cores, total.Cores)
	if len(res.Usage.Procs) == 1 {
		re.Note = "one process: the embedded network's nodes and the load generator's clients together"
	}
	return re, nil
}
