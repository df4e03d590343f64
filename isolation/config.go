package isolation

import (
	"fmt"
	"math"
	"time"
)

// Defaults of Config.
const (
	// DefaultK is QiOi's gain, chosen empirically in its §4.3.
	DefaultK                   = 4
	DefaultCalibration         = 30 * time.Second
	DefaultCalibrationFraction = 0.9
	// DefaultDecayHalfLife returns a share from DefaultCap to the default
	// within 30 s of the interference ending: the excess, 9·1024, snaps to
	// the default below 1% of 1024, log2(900) ≈ 9.8 half-lives later.
	DefaultDecayHalfLife = 3 * time.Second
	// DefaultCap is ten times the default share: a boosted node gets at most
	// about ten times the CPU of a default neighbour under contention.
	DefaultCap Shares = 10 * DefaultShares
	// CapLimit is the largest Cap: the v1 shares that MaxWeight schedules
	// like, so that both hierarchies can realise every share the
	// controller asks for.
	CapLimit Shares = 102400
	// DefaultDelayTarget is `strand isolate`'s delay target. On the
	// 2-core machine of docs/isolation.md the nodes waited 0.05 to 0.14 ms
	// per slice alone at up to half their maximum rate and 0.14 to 0.3 ms
	// alone at saturation; beside 8 hogs, 0.15 to 0.46 ms. A target in
	// the overlap boosts a saturated network with no neighbour too, which
	// costs nothing (the boost takes CPU only from siblings that want it)
	// but keeps its shares up.
	DefaultDelayTarget = 200 * time.Microsecond
	// MaxDelayTarget bounds DelayTarget: a thread that waits a second
	// for each slice is starved, whatever the target.
	MaxDelayTarget = time.Second
	// MaxK bounds a component's gain; beyond it one unit of deficit
	// already pins the share at any allowed Cap.
	MaxK         = 100
	maxComponent = 16
)

// Component is one group of node processes whose CPU share the controller
// sets on its own: QiOi boosts orderers and peers and leaves contract
// runtimes at the default.
type Component struct {
	// Name names the component in decisions and is the cgroup directory
	// the actuator creates for it: 1 to 32 of [a-z0-9-], starting with a
	// letter or digit.
	Name string
	// K is the gain of QiOi's rule for this component: under interference
	// of relative size e its share is DefaultShares·(1 + K·e). 0 keeps the
	// component at DefaultShares.
	K float64
}

// Config says what the controller aims for and how hard it pushes.
type Config struct {
	// Components are the groups the controller sets shares for, in the
	// order its decisions list them. Default: orderer and peer with gain
	// DefaultK, contract with gain 0 (QiOi's split).
	Components []Component
	// Threshold is the throughput objective in transactions per second
	// (QiOi's isolation threshold T): throughput below it is
	// interference. 0 learns it from the calibration window.
	Threshold float64
	// LatencyTarget is the p99 latency objective: a p99 above it is
	// interference, of relative size (p99 − target)/target. 0 means no
	// latency objective.
	LatencyTarget time.Duration
	// DelayTarget is the mean run-queue wait per time slice of the nodes
	// (Sample.Delay) above which they suffer interference: a delay D
	// above it is interference of size 1 − DelayTarget/D, and a
	// throughput deficit or latency excess counts only while D is above
	// it. 0 means no delay objective (QiOi's throughput rule alone).
	// DefaultDelayTarget is what `strand isolate` uses.
	DelayTarget time.Duration
	// Calibration is how long the controller watches throughput before
	// it learns Threshold when Threshold is 0. Default DefaultCalibration.
	Calibration time.Duration
	// CalibrationFraction is the learned threshold as a fraction of the
	// mean busy throughput seen during calibration: a little below it, so
	// that noise alone is not interference. In (0, 1]. Default
	// DefaultCalibrationFraction.
	CalibrationFraction float64
	// DecayHalfLife is how fast a boosted share returns to DefaultShares
	// once interference ends: its excess over the default halves every
	// DecayHalfLife. Default DefaultDecayHalfLife.
	DecayHalfLife time.Duration
	// HoldShares keeps a boosted share when interference ends, as QiOi
	// does, instead of decaying it.
	HoldShares bool
	// SlowFall lets a share fall, while interference lasts, no faster
	// than it decays once interference ends (its excess over the
	// default halving every DecayHalfLife), instead of following a
	// smaller interference down at once as QiOi does. A boost that works
	// lowers the delay it answered; following that down takes the boost
	// away, the delay comes back, and the share saws (the qioi preset's
	// periods: 5120, then 2635 a second later). Rising is unchanged.
	SlowFall bool
	// Cap is the largest share the controller sets, in
	// [DefaultShares, CapLimit]. Default DefaultCap.
	Cap Shares
}

// EnsureDefaults fills in zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	if c.Components == nil {
		c.Components = []Component{{"orderer", DefaultK}, {"peer", DefaultK}, {"contract", 0}}
	}
	if c.Calibration == 0 {
		c.Calibration = DefaultCalibration
	}
	if c.CalibrationFraction == 0 {
		c.CalibrationFraction = DefaultCalibrationFraction
	}
	if c.DecayHalfLife == 0 {
		c.DecayHalfLife = DefaultDecayHalfLife
	}
	if c.Cap == 0 {
		c.Cap = DefaultCap
	}
}

// Validate reports the first invalid field, naming its value and what is
// allowed. Zero fields other than Threshold and LatencyTarget are invalid:
// call EnsureDefaults first.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...)
	}
	switch {
	case math.IsNaN(c.Threshold) || math.IsInf(c.Threshold, 0) || c.Threshold < 0:
		return bad("Config.Threshold is %v tps, want a finite number ≥ 0 (0 learns it during calibration)", c.Threshold)
	case c.DelayTarget < 0 || c.DelayTarget > MaxDelayTarget:
		return bad("Config.DelayTarget is %s, want 0 (none) or in (0, %s]", c.DelayTarget, MaxDelayTarget)
	case c.LatencyTarget < 0:
		return bad("Config.LatencyTarget is %s, want ≥ 0 (0 means no latency objective)", c.LatencyTarget)
	case c.Calibration <= 0:
		return bad("Config.Calibration is %s, want > 0 (0 means the default, %s)", c.Calibration, DefaultCalibration)
	case !(c.CalibrationFraction > 0 && c.CalibrationFraction <= 1):
		return bad("Config.CalibrationFraction is %v, want in (0, 1] (0 means the default, %v)", c.CalibrationFraction, DefaultCalibrationFraction)
	case c.DecayHalfLife <= 0:
		return bad("Config.DecayHalfLife is %s, want > 0 (0 means the default, %s)", c.DecayHalfLife, DefaultDecayHalfLife)
	case c.Cap < DefaultShares || c.Cap > CapLimit:
		return bad("Config.Cap is %d, want in [%d, %d] (0 means the default, %d)", c.Cap, DefaultShares, CapLimit, DefaultCap)
	case len(c.Components) == 0 || len(c.Components) > maxComponent:
		return bad("Config.Components has %d entries, want 1 to %d", len(c.Components), maxComponent)
	}
	seen := make(map[string]bool, len(c.Components))
	for i, comp := range c.Components {
		if err := checkName(comp.Name); err != nil {
			return bad("Config.Components[%d].Name %v", i, err)
		}
		if seen[comp.Name] {
			return bad("Config.Components[%d].Name %q repeats an earlier component, want unique names", i, comp.Name)
		}
		seen[comp.Name] = true
		if !(comp.K >= 0 && comp.K <= MaxK) {
			return bad("Config.Components[%d].K (%s) is %v, want in [0, %d]", i, comp.Name, comp.K, MaxK)
		}
	}
	return nil
}

// checkName refuses names that are not a single safe cgroup directory
// name, so that no component can point the actuator outside its subtree.
func checkName(name string) error {
	if len(name) == 0 || len(name) > 32 {
		return fmt.Errorf("is %q, want 1 to 32 characters", name)
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		ok := ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' && i > 0
		if !ok {
			return fmt.Errorf("is %q, want only [a-z0-9-], not starting with '-'", name)
		}
	}
	return nil
}
