package bench

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/strand-ledger/strand/energy"
	"github.com/strand-ledger/strand/identity"
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
	// PeersBusy is the busy-period figures of the peer processes
	// together, per peer: their busy joules and busy seconds summed and
	// divided by their number; nil where no peer process had busy
	// figures (BusyNote says why).
	PeersBusy *ProcEnergy `json:"peers_busy,omitempty"`
	// BusySource names where the busy periods come from.
	BusySource string `json:"busy_source,omitempty"`
	BusyNote   string `json:"busy_note,omitempty"`
}

// ProcEnergy is one process's (or the total's) energy over the round,
// with the round's committed transactions.
type ProcEnergy struct {
	Name         string  `json:"name"`
	Joules       float64 `json:"joules"`
	Watts        float64 `json:"watts"`
	JPerTx       float64 `json:"j_per_tx"`
	TxPerSecPerJ float64 `json:"tx_per_s_per_j"`
	// Busy-period figures, for a process that is one peer: its energy
	// over its committer's busy periods only (BusyS of the round), the
	// study's idle exclusion. Zero where there are none.
	BusyS            float64 `json:"busy_s,omitempty"`
	BusyJoules       float64 `json:"busy_joules,omitempty"`
	BusyWatts        float64 `json:"busy_watts,omitempty"`
	BusyJPerTx       float64 `json:"busy_j_per_tx,omitempty"`
	BusyTxPerSecPerJ float64 `json:"busy_tx_per_s_per_j,omitempty"`
}

// PeerBusySource is RunEnergy.BusySource: the counter the busy periods
// are read from.
const PeerBusySource = "each peer's strand_committer_pipeline_busy_seconds_total at the load's start and end"

// setBusy fills p's busy-period figures from the process's CPU time and
// its peer's busy time over the round. Under the model the energy of a
// busy period is its CPU at active power plus its idle core-time at idle
// power; with only the round's totals to go on, every CPU second of the
// process is counted as inside its busy periods (a peer also endorses and
// serves between blocks, and that CPU is kept, not excluded), and what is
// excluded is the idle core-time outside them: exactly the study's
// exclusion for a validating peer that does nothing else.
func (p *ProcEnergy) setBusy(m energy.ModelParams, cpu, busy time.Duration, txs int64) {
	if busy <= 0 {
		return
	}
	p.BusyS = busy.Seconds()
	p.BusyJoules = energy.ModelJoules(m, cpu, busy)
	p.BusyWatts = p.BusyJoules / p.BusyS
	if txs > 0 && p.BusyJoules > 0 {
		p.BusyJPerTx, p.BusyTxPerSecPerJ = p.BusyJoules/float64(txs), float64(txs)/p.BusyJoules
	}
}

// peersBusy is the busy figures of procs' peers together, per peer; nil
// where none has any.
func peersBusy(procs []ProcEnergy, txs int64) *ProcEnergy {
	var n int
	var s, j float64
	for _, p := range procs {
		if p.BusyS > 0 {
			n, s, j = n+1, s+p.BusyS, j+p.BusyJoules
		}
	}
	if n == 0 {
		return nil
	}
	out := &ProcEnergy{Name: fmt.Sprintf("peers (per peer, %d)", n), BusyS: s / float64(n), BusyJoules: j / float64(n)}
	out.BusyWatts = j / s
	if txs > 0 && j > 0 {
		out.BusyJPerTx, out.BusyTxPerSecPerJ = out.BusyJoules/float64(txs), float64(txs)/out.BusyJoules
	}
	return out
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
	busy *busyWatch
}

// seriesPipelineBusy is the counter of a peer's busy periods.
const seriesPipelineBusy = "strand_committer_pipeline_busy_seconds_total"

// busyWatch reads each peer process's busy time (seriesPipelineBusy) at
// the load's start and end.
type busyWatch struct {
	names, addrs []string
	before       []float64
	err          error // the first scrape's; the busy figures are then absent
}

// watchBusy scrapes the peers of a network that runs in its own
// processes now; nil for an embedded network, whose one process holds
// every peer (and the clients), so that no peer's busy periods are the
// process's.
func watchBusy(n *Network) *busyWatch {
	if n == nil || n.Embedded() || n.Layout == nil {
		return nil
	}
	w := &busyWatch{}
	for _, nd := range n.Layout.Nodes {
		if nd.Role == identity.RolePeer && nd.Metrics != "" {
			w.names, w.addrs = append(w.names, nd.Name), append(w.addrs, nd.Metrics)
		}
	}
	w.before, w.err = scrapeBusy(w.addrs)
	return w
}

// scrapeBusy reads seriesPipelineBusy from each address, summed over
// its label sets.
func scrapeBusy(addrs []string) ([]float64, error) {
	out := make([]float64, len(addrs))
	for i, a := range addrs {
		s, err := readMetrics(a)
		if err != nil {
			return nil, err
		}
		found := false
		for k, v := range s {
			if k == seriesPipelineBusy || strings.HasPrefix(k, seriesPipelineBusy+"{") {
				out[i], found = out[i]+v, true
			}
		}
		if !found {
			return nil, fmt.Errorf("bench: the metrics at %s have no %s (a peer older than this bench?)", a, seriesPipelineBusy)
		}
	}
	return out, nil
}

// finish returns each peer's busy time since watchBusy, by process name.
func (w *busyWatch) finish() (map[string]time.Duration, error) {
	if w.err != nil {
		return nil, w.err
	}
	after, err := scrapeBusy(w.addrs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Duration, len(w.names))
	for i, name := range w.names {
		out[name] = time.Duration(max(after[i]-w.before[i], 0) * float64(time.Second))
	}
	return out, nil
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

// begin starts the round's measurement of network n.
func (m *roundMeter) begin(n *Network) {
	m.busy = watchBusy(n)
	if m.rapl != nil {
		m.r0, m.err = m.rapl.Read(time.Now())
	}
}

// peerBusy is each peer process's busy time over the round, or why
// there is none.
func (m *roundMeter) peerBusy() (map[string]time.Duration, string) {
	if m.busy == nil {
		return nil, "no busy-period figures: an embedded network is one process holding every peer and the clients, so no peer's busy periods are the process's; run against a strand net up network (--net) for them"
	}
	b, err := m.busy.finish()
	if err != nil {
		return nil, fmt.Sprintf("no busy-period figures: %v", err)
	}
	return b, ""
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
			Total:    fig("socket (RAPL: packages + DRAM)", e.Joules),
			Note:     "RAPL measures the sockets, not processes: no per-process figures, and the total includes everything the machine ran",
			BusyNote: "no busy-period figures: RAPL measures the socket, and bench run keeps no energy log to lay each peer's busy periods over"}, nil
	}
	p := m.cfg.Model
	total := p
	total.Cores = res.Usage.Cores // the network shares the machine's cores
	if total.Cores < 1 {
		total.Cores = p.Cores
	}
	re := &RunEnergy{Source: energy.SourceModel, Model: &p, Label: energy.Label(energy.SourceModel, &p)}
	peerBusy, busyNote := m.peerBusy()
	var busy time.Duration
	for _, u := range res.Usage.Procs {
		if u.Err != "" {
			return nil, fmt.Errorf("bench: energy of %s: its CPU time could not be read: %s", u.Name, u.Err)
		}
		b := time.Duration(u.CPUPercent / 100 * float64(t))
		pe := fig(u.Name, energy.ModelJoules(p, b, t))
		if pb, ok := peerBusy[u.Name]; ok {
			pe.setBusy(p, b, pb, txs)
		}
		re.Procs = append(re.Procs, pe)
		if u.Name != loadGenerator {
			busy += b
		}
	}
	if re.PeersBusy = peersBusy(re.Procs, txs); re.PeersBusy != nil {
		re.BusySource = PeerBusySource
	} else {
		re.BusyNote = busyNote
	}
	re.Total = fig(fmt.Sprintf("network (%d cores)", total.Cores), energy.ModelJoules(total, busy, t))
	re.Note = fmt.Sprintf("each process is charged as if it had %d cores to itself, so processes do not add up to the network's total, which counts the machine's %d cores once and leaves out the load generator", p.Cores, total.Cores)
	if len(res.Usage.Procs) == 1 {
		re.Note = "one process: the embedded network's nodes and the load generator's clients together"
	}
	return re, nil
}
