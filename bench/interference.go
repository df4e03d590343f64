package bench

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/strand-ledger/strand/isolation"
	"github.com/strand-ledger/strand/localnet"
)

// Interference says how a round's network runs beside other work: as
// processes of their own (network: processes), with co-located CPU hogs,
// under the QiOi controller, and with CPU budgets per node role. Every
// field needs a network the round starts; all but Network need a writable
// cgroup hierarchy (root, or cgroup_parent delegated to this user).
// docs/isolation.md describes the experiments built from them.
type Interference struct {
	// Network is "embedded" (the default: every node in the harness's
	// process) or "processes" (each node a process of the strand binary,
	// which hogs, isolation and cpu_quota need).
	Network string `yaml:"network,omitempty" json:"network,omitempty"`
	// Hogs is the number of co-located CPU hogs (hog.go), each a process
	// in a cgroup of its own at the default weight, running from before
	// the load starts until HogsStop or the load's end.
	Hogs int `yaml:"hogs,omitempty" json:"hogs,omitempty"`
	// HogsStop stops the hogs this long into the load (0: at its end);
	// the round then reports how long the controller's shares took to
	// return to the default.
	HogsStop time.Duration `yaml:"hogs_stop,omitempty" json:"hogs_stop,omitempty"`
	// HogsIdle marks the hogs' subtree idle (cpu.idle 1, v1 and v2: the
	// kernel's SCHED_IDLE for a group) and puts it directly under the
	// cgroup parent, so that it ranks below everything else on the
	// machine: the strongest weight the kernel gives, and so the bound of
	// any share controller. It is not strict priority: the hogs still run
	// while threads of strand wait (docs/isolation.md, "Where the bound's
	// tail was").
	HogsIdle bool `yaml:"hogs_idle,omitempty" json:"hogs_idle,omitempty"`
	// Isolation runs the QiOi controller on the nodes during the round.
	// Its gain 0 keeps every share at the default while the loop still
	// places, measures and reports: the "without" of a comparison.
	Isolation *IsolationConfig `yaml:"isolation,omitempty" json:"isolation,omitempty"`
	// CPUQuota caps each node of a kind ("orderer", "peer", "memnode",
	// "compute") at this many cores, whatever the machine has free; each
	// node is in a cgroup of its own with a CFS quota.
	CPUQuota map[string]float64 `yaml:"cpu_quota,omitempty" json:"cpu_quota,omitempty"`
	// CgroupParent is the cgroup directory the round's cgroups go under
	// (default: the first usable of isolation.DefaultParents).
	CgroupParent string `yaml:"cgroup_parent,omitempty" json:"cgroup_parent,omitempty"`
}

// IsolationConfig is the controller of a round (isolation.Config; one
// component per node, every one with gain K).
type IsolationConfig struct {
	K           float64       `yaml:"k" json:"k"`
	DelayTarget time.Duration `yaml:"delay_target,omitempty" json:"delay_target,omitempty"`
	// Threshold is the throughput objective in tps; ThresholdOf instead
	// takes it as 0.9 of the throughput of an earlier round of the run
	// (its label); with neither the controller learns it over its
	// calibration window.
	Threshold     float64       `yaml:"threshold,omitempty" json:"threshold,omitempty"`
	ThresholdOf   string        `yaml:"threshold_of,omitempty" json:"threshold_of,omitempty"`
	LatencyTarget time.Duration `yaml:"latency_target,omitempty" json:"latency_target,omitempty"`
	Period        time.Duration `yaml:"period,omitempty" json:"period,omitempty"`
	// Probe is isolation.LoopConfig.Probe: between periods, every Probe
	// the loop reads the nodes' scheduler counters and raises the shares
	// at once when the delay is above twice the target. 0: no probes.
	Probe time.Duration `yaml:"probe,omitempty" json:"probe,omitempty"`
	// SlowFall is isolation.Config.SlowFall: under interference a share
	// falls no faster than it decays.
	SlowFall bool `yaml:"slow_fall,omitempty" json:"slow_fall,omitempty"`
}

// thresholdFraction is ThresholdOf's share of the earlier round's
// throughput, isolation.DefaultCalibrationFraction as when learned.
const thresholdFraction = isolation.DefaultCalibrationFraction

// quotaRoles are the keys of cpu_quota: node kinds (localnet.Node.Kind);
// memory nodes only on a round with memnodes, compute nodes only with
// compute_nodes (disagg.go).
var quotaRoles = []string{"orderer", "peer", "memnode", localnet.ComputeKind}

func (i Interference) set() bool {
	return i.Network != "" || i.Hogs != 0 || i.HogsStop != 0 || i.HogsIdle || i.Isolation != nil || len(i.CPUQuota) != 0 || i.CgroupParent != ""
}

// cgroups says whether the round puts its nodes in cgroups.
func (i Interference) cgroups() bool { return i.Hogs > 0 || i.Isolation != nil || len(i.CPUQuota) > 0 }

// maxHogs bounds hogs: more processes than that only measure the
// scheduler's overhead.
const maxHogs = 256

func (i Interference) validate(duration time.Duration) error {
	procs := i.Network == "processes"
	switch {
	case i.Network != "" && i.Network != "embedded" && !procs:
		return fmt.Errorf("network = %q: want embedded or processes", i.Network)
	case i.Hogs < 0 || i.Hogs > maxHogs:
		return fmt.Errorf("hogs = %d: want 0 to %d", i.Hogs, maxHogs)
	case i.HogsIdle && i.Hogs == 0:
		return fmt.Errorf("hogs_idle: want it only with hogs")
	case i.HogsStop != 0 && i.Hogs == 0:
		return fmt.Errorf("hogs_stop = %v: want it only with hogs", i.HogsStop)
	case i.HogsStop < 0 || i.HogsStop >= duration && i.HogsStop != 0:
		return fmt.Errorf("hogs_stop = %v: want 0 (at the end) or more than 0 and less than the duration, %v", i.HogsStop, duration)
	case i.cgroups() && !procs:
		return fmt.Errorf("hogs, isolation and cpu_quota need network: processes (an embedded network's nodes share the harness's process), have network = %q", i.Network)
	case i.CgroupParent != "" && (!filepath.IsAbs(i.CgroupParent) || filepath.Clean(i.CgroupParent) != i.CgroupParent):
		return fmt.Errorf("cgroup_parent = %q: want an absolute, clean path", i.CgroupParent)
	case i.CgroupParent != "" && !i.cgroups():
		return fmt.Errorf("cgroup_parent = %q: want it only with hogs, isolation or cpu_quota", i.CgroupParent)
	}
	for role, cores := range i.CPUQuota {
		if !slices.Contains(quotaRoles, role) {
			return fmt.Errorf("cpu_quota.%s: want a node role, one of %s", role, strings.Join(quotaRoles, ", "))
		}
		if err := isolation.CheckQuota("cpu_quota."+role, cores); err != nil {
			return err
		}
	}
	if c := i.Isolation; c != nil {
		if c.Threshold != 0 && c.ThresholdOf != "" {
			return fmt.Errorf("isolation: threshold = %v and threshold_of = %q: want one", c.Threshold, c.ThresholdOf)
		}
		if c.Period < 0 {
			return fmt.Errorf("isolation.period = %v: want more than 0 (0 means %v)", c.Period, isolation.DefaultPeriod)
		}
		if period := cmp.Or(c.Period, isolation.DefaultPeriod); c.Probe < 0 || c.Probe >= period {
			return fmt.Errorf("isolation.probe = %v: want 0 (no probes) or more than 0 and less than the period, %v", c.Probe, period)
		}
		if c.Probe > 0 && c.DelayTarget == 0 {
			return fmt.Errorf("isolation.probe = %v: want it only with a delay_target (a probe reads the delay alone)", c.Probe)
		}
		if _, err := isolation.New(c.controller([]string{"node"})); err != nil {
			return fmt.Errorf("isolation (k, delay_target, threshold, latency_target): %w", err)
		}
	}
	return nil
}

// controller is the controller's configuration for the components comps.
func (c IsolationConfig) controller(comps []string) isolation.Config {
	cfg := isolation.Config{Threshold: c.Threshold, DelayTarget: c.DelayTarget, LatencyTarget: c.LatencyTarget, SlowFall: c.SlowFall}
	for _, name := range comps {
		cfg.Components = append(cfg.Components, isolation.Component{Name: name, K: c.K})
	}
	return cfg
}

// resolveThreshold sets isolation.threshold from the earlier round
// isolation.threshold_of names.
func resolveThreshold(r Round, done []*Result) (Round, error) {
	c := r.Isolation
	if c == nil || c.ThresholdOf == "" {
		return r, nil
	}
	for i := len(done) - 1; i >= 0; i-- {
		if done[i] == nil || done[i].Label != c.ThresholdOf {
			continue
		}
		if !(done[i].ThroughputTPS > 0) {
			return r, fmt.Errorf("bench: round %q: isolation.threshold_of %q: that round committed nothing", r.Label, c.ThresholdOf)
		}
		cc := *c
		cc.Threshold, cc.ThresholdOf = thresholdFraction*done[i].ThroughputTPS, ""
		r.Isolation = &cc
		return r, nil
	}
	return r, fmt.Errorf("bench: round %q: isolation.threshold_of %q: no earlier round of this run has that label", r.Label, c.ThresholdOf)
}

// componentName is node's cgroup: its name in lower case, dots as dashes
// ("peer0.Org1" → "peer0-org1").
func componentName(node string) string {
	return strings.ToLower(strings.ReplaceAll(node, ".", "-"))
}

// IsolationResult is what a round with hogs, a controller or quotas
// measured beside the usual figures.
type IsolationResult struct {
	Hogs int `json:"hogs"`
	// HogOpsPerS is the hogs' work rate, all together, in ops per second
	// over HogWindowS: from the load's start to HogsStop or its end.
	HogOpsPerS float64 `json:"hog_ops_per_s"`
	HogWindowS float64 `json:"hog_window_s"`
	// Nodes are the nodes' scheduling over the load.
	Nodes      []NodeSched        `json:"nodes"`
	Quota      map[string]float64 `json:"cpu_quota,omitempty"`
	Controller *ControllerResult  `json:"controller,omitempty"`
}

// NodeSched is one node's scheduling over the load, from the kernel's
// counters (/proc/PID/task/*/schedstat).
type NodeSched struct {
	Name       string  `json:"name"`
	CPUPercent float64 `json:"cpu_percent"` // of one core
	// WaitPerCPUS is the run-queue wait per second on a CPU: the
	// scheduling delay the controller watches.
	WaitPerCPUS float64 `json:"wait_per_cpu_s"`
	// WaitPerSliceMs is the mean wait before each time slice, QiOi's
	// "scheduling delay" (its Table 2).
	WaitPerSliceMs float64 `json:"wait_per_slice_ms"`
	// QuotaCores is the node's CPU quota (cpu_quota of its kind; 0: none)
	// and ThrottledPct the share of the quota's enforcement periods over
	// the load in which it used the quota up and waited: near 100 the
	// quota is what holds the node back, near 0 it has more than it uses.
	QuotaCores   float64 `json:"cpu_quota,omitempty"`
	ThrottledPct float64 `json:"throttled_pct,omitempty"`
}

// ControllerResult is what the controller did over the round.
type ControllerResult struct {
	K           float64       `json:"k"`
	DelayTarget time.Duration `json:"delay_target"`
	Threshold   float64       `json:"threshold_tps"` // as used (0: still learning at the end)
	Decisions   uint64        `json:"decisions"`
	Samples     uint64        `json:"samples"`
	// MeanDelayMs is the mean of the samples' run-queue wait per time
	// slice the controller saw (samples with none measured left out).
	MeanDelayMs float64 `json:"mean_delay_ms"`
	MaxShares   int     `json:"max_shares"` // the largest share any node had
	// DefaultAfterStopS is how long after HogsStop every share was back
	// at the default (-1: not by the round's end; 0 with no HogsStop).
	DefaultAfterStopS float64 `json:"default_after_hogs_stop_s"`
	// Exited is how many nodes left control (exited) during the round.
	Exited uint64 `json:"exited"`
	// Periods are the controller's sampled periods during the load, in
	// order: what it measured and the shares it left.
	Periods []ControllerPeriod `json:"periods,omitempty"`
}

// ControllerPeriod is one control period of a round.
type ControllerPeriod struct {
	// T is the period's end in seconds from the load's start.
	T          float64 `json:"t_s"`
	Throughput float64 `json:"throughput_tps"`
	P99Ms      float64 `json:"p99_ms"`   // 0: not measured
	DelayMs    float64 `json:"delay_ms"` // mean run-queue wait per time slice; 0: not measured
	Threshold  float64 `json:"threshold_tps"`
	Idle       bool    `json:"idle,omitempty"`
	Unscraped  bool    `json:"unscraped,omitempty"`
	// Shares are each component's CPU share after the period's changes.
	Shares map[string]int `json:"shares"`
	// Changes are the period's decisions with their reasons, the
	// probes' during the period first (reasons starting "probe:"); the
	// load's first period lists before them the decisions made since the
	// controller started, before the load ("0.412 s before the load: ...").
	Changes []string `json:"changes,omitempty"`
}

// controllerPeriod is p as a round records it; t0 is the load's start.
func controllerPeriod(p isolation.PeriodReport, t0 time.Time) ControllerPeriod {
	cp := ControllerPeriod{T: round3(p.At.Sub(t0).Seconds()), Throughput: round2(p.Sample.Throughput),
		P99Ms: round3(float64(p.Sample.P99.Microseconds()) / 1000), DelayMs: round3(float64(p.Sample.Delay.Microseconds()) / 1000),
		Threshold: round2(p.Threshold), Idle: p.Sample.Idle, Unscraped: p.Sample.Unscraped, Shares: p.Shares}
	for _, c := range p.Changes {
		cp.Changes = append(cp.Changes, c.String())
	}
	return cp
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
