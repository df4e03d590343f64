package isolation

import (
	"fmt"
	"math"
	"time"
)

// The controller's rule, per component with gain k, at each sample:
//
//   - Interference of relative size e is the largest of the throughput
//     deficit (T − A)/T when the throughput A is below the threshold T, the
//     latency excess (p99 − L)/L when the p99 is above the target L, and,
//     with a delay target W, the delay excess 1 − W/D when the nodes'
//     mean run-queue wait per time slice D is above W. An idle sample has
//     e = 0: no load is not interference.
//   - With a delay target, the throughput deficit and the latency excess
//     count only while D > W: a throughput that falls while the nodes do
//     not wait for a CPU is a client slowing down (or a slow disk), which
//     more CPU weight cannot help. Without one, they count alone, as in
//     QiOi, and a falling offered load reads as interference.
//   - e > 0: the share becomes DefaultShares·(1 + k·e), QiOi's
//     S_default + S_default·k·|T−A|/T, clamped to [DefaultShares, Cap]. Like
//     QiOi it follows e down as well as up while interference lasts;
//     with SlowFall it falls no faster than the decay below.
//   - e = 0: QiOi keeps the previous share. Unless HoldShares, the excess
//     over DefaultShares instead halves every DecayHalfLife of the time
//     since the previous sample, and the share snaps to DefaultShares once
//     the excess is at most DefaultShares/100 (one cpu.weight step).
//
// Invariants: every share the controller holds or reports is in
// [DefaultShares, Cap]; a component with k = 0 stays at DefaultShares; a
// Change is reported exactly when a component's whole share differs from
// the one last reported (initially DefaultShares, which is what the
// actuator's new cgroups start with), and always carries a reason.

// Sample is one measurement period as the caller saw it.
type Sample struct {
	// Throughput is the committed transactions per second over the period.
	Throughput float64
	// P99 is the 99th percentile commit latency over the period; 0 means
	// not measured, and the latency objective is then not checked.
	P99 time.Duration
	// Idle says that no transaction was submitted during the period: the
	// sample is not interference, and calibration ignores it.
	Idle bool
	// Unscraped says that no peer answered for the period: Throughput
	// and P99 are unknown, and only Delay, which the loop reads from the
	// kernel, counts. Under heavy interference the peers' /metrics
	// endpoints are starved like the rest of the nodes; without it the
	// controller would be blind exactly when it is needed most.
	Unscraped bool
	// Delay is how long the nodes' threads waited on a run queue, on
	// average, before each time slice they ran in the period
	// (/proc/PID/task/*/schedstat, see Delay); 0 means not measured,
	// which with a delay target is no contention.
	Delay time.Duration
}

// Change is a decision: set Component's share from From to To, because of
// Reason.
type Change struct {
	Component string
	From, To  Shares
	Reason    string
}

func (c Change) String() string {
	return fmt.Sprintf("%s %d→%d: %s", c.Component, c.From, c.To, c.Reason)
}

// Controller decides CPU shares from measurements. It is a pure state
// machine: it starts no goroutine, reads no clock and does no I/O; time
// arrives as an argument. A Controller is for one goroutine.
//
// The caller's contract: call Observe once per measurement period with
// that period's sample and the time it ended, in time order, and apply
// the returned changes (Actuator.Set) in the order given; call Stop on
// shutdown and apply its changes before removing the cgroups. When
// Threshold is 0, the first Calibration of samples must be taken with no
// neighbour competing for the CPU: the controller cannot tell, and learns
// whatever it sees as the objective.
type Controller struct {
	cfg       Config
	threshold float64 // 0 while calibrating
	calStart  time.Time
	calSum    float64 // busy throughput summed over calN samples
	calN      int
	shares    []float64 // exact share per component, for decay
	reported  []Shares  // share per component last reported
	last      time.Time
	started   bool
}

// New returns a controller for cfg, with zero fields set to their
// defaults, or an error naming the invalid field.
func New(cfg Config) (*Controller, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, threshold: cfg.Threshold}
	c.cfg.Components = append([]Component(nil), cfg.Components...)
	c.shares = make([]float64, len(cfg.Components))
	c.reported = make([]Shares, len(cfg.Components))
	for i := range c.shares {
		c.shares[i], c.reported[i] = float64(DefaultShares), DefaultShares
	}
	return c, nil
}

// Observe takes the sample of the period ending at now and returns the
// share changes it decides, in Config.Components order (none when no
// share changes). It refuses a sample with a negative or non-finite
// throughput, a negative p99, or a time before the previous sample's.
func (c *Controller) Observe(s Sample, now time.Time) ([]Change, error) {
	switch {
	case math.IsNaN(s.Throughput) || math.IsInf(s.Throughput, 0) || s.Throughput < 0:
		return nil, fmt.Errorf("%w: Sample.Throughput is %v tps, want a finite number ≥ 0", ErrBadSample, s.Throughput)
	case s.Delay < 0:
		return nil, fmt.Errorf("%w: Sample.Delay is %s, want ≥ 0 (0 means not measured)", ErrBadSample, s.Delay)
	case s.P99 < 0:
		return nil, fmt.Errorf("%w: Sample.P99 is %s, want ≥ 0 (0 means not measured)", ErrBadSample, s.P99)
	case c.started && now.Before(c.last):
		return nil, fmt.Errorf("%w: sample time %s is %s before the previous sample's %s, want samples in time order",
			ErrBadSample, now.Format(time.RFC3339Nano), c.last.Sub(now), c.last.Format(time.RFC3339Nano))
	}
	var dt time.Duration
	if c.started {
		dt = now.Sub(c.last)
	} else {
		c.started, c.calStart = true, now
	}
	c.last = now
	c.calibrate(s, now)
	e, why := c.interference(s)
	var out []Change
	for i, comp := range c.cfg.Components {
		reason := c.step(i, comp.K, e, why, dt)
		if to := Shares(math.Round(c.shares[i])); to != c.reported[i] && worthMoving(c.reported[i], to) {
			out = append(out, Change{Component: comp.Name, From: c.reported[i], To: to, Reason: reason})
			c.reported[i] = to
		}
	}
	return out, nil
}

// ProbeFactor is how far above DelayTarget a probe's delay must be for
// Probe to act. A probe's window is a tenth of a period, so its delay is
// noisier: in the qioi preset, probes acting at the target itself raised
// the shares again, by a few percent, 23 s after the hogs had stopped
// (the nodes alone at half rate, their 100 ms windows now and then just
// over 200 µs per slice), restarting the return to the default. The
// interference probes are for is far above it: the hogs' first period
// read 0.85 to 0.91 ms per slice.
const ProbeFactor = 2

// Probe takes the nodes' delay measured over a short window ending
// between samples (LoopConfig.Probe) and, when it is above ProbeFactor
// times the delay target, raises every share that is below what that
// delay alone gives by the rule above. It only ever raises: it
// lowers and decays nothing, and leaves calibration and the decay's clock
// to Observe, which at the period's end follows the interference down as
// usual. It answers interference that begins mid-period at once, where
// Observe would answer up to a period later: in the qioi preset the hogs'
// first period stalled strand's commits for 0.6 to 1 s, a tenth of a
// 10 s round's transactions, which alone set the round's p99. Without a
// delay target it does nothing (throughput and latency need the period's
// scrape), and so does a delay of 0 (not measured). A negative delay is
// refused.
func (c *Controller) Probe(delay time.Duration) ([]Change, error) {
	if delay < 0 {
		return nil, fmt.Errorf("%w: probe delay is %s, want ≥ 0 (0 means not measured)", ErrBadSample, delay)
	}
	w := c.cfg.DelayTarget
	if w == 0 || delay <= ProbeFactor*w {
		return nil, nil
	}
	e := 1 - float64(w)/float64(delay)
	var out []Change
	for i, comp := range c.cfg.Components {
		to := min(float64(DefaultShares)*(1+comp.K*e), float64(c.cfg.Cap))
		if to <= c.shares[i] {
			continue
		}
		c.shares[i] = to
		reason := fmt.Sprintf("probe: delay %s > %d× target %s (excess %.3f), k %g", delay, ProbeFactor, w, e, comp.K)
		if to == float64(c.cfg.Cap) {
			reason += fmt.Sprintf(", capped at %d", c.cfg.Cap)
		}
		if r := Shares(math.Round(to)); r != c.reported[i] && worthMoving(c.reported[i], r) {
			out = append(out, Change{Component: comp.Name, From: c.reported[i], To: r, Reason: reason})
			c.reported[i] = r
		}
	}
	return out, nil
}

// calibrate learns the threshold, when none is configured, from the busy
// samples of the first Calibration: the first sample at or after its end
// closes the window (and counts), provided some busy sample was seen;
// otherwise the window stays open until one is.
func (c *Controller) calibrate(s Sample, now time.Time) {
	if c.threshold > 0 {
		return
	}
	if !s.Idle && !s.Unscraped && s.Throughput > 0 {
		c.calSum += s.Throughput
		c.calN++
	}
	if c.calN > 0 && now.Sub(c.calStart) >= c.cfg.Calibration {
		c.threshold = c.cfg.CalibrationFraction * c.calSum / float64(c.calN)
	}
}

// interference returns the relative size of the interference s shows
// (0 for none) and, when there is some, what shows it.
func (c *Controller) interference(s Sample) (float64, string) {
	if s.Idle {
		return 0, ""
	}
	var e float64
	var why string
	if w := c.cfg.DelayTarget; w > 0 {
		if s.Delay <= w {
			return 0, "" // the nodes get the CPU they ask for: whatever slows them, it is not a neighbour
		}
		e = 1 - float64(w)/float64(s.Delay)
		why = fmt.Sprintf("delay %s > target %s (excess %.3f)", s.Delay, w, e)
	}
	if s.Unscraped {
		return e, why
	}
	if t := c.threshold; t > 0 && s.Throughput < t {
		if x := (t - s.Throughput) / t; x > e {
			e = x
			why = fmt.Sprintf("throughput %.1f tps < threshold %.1f tps (deficit %.3f)", s.Throughput, t, x)
		}
	}
	if l := c.cfg.LatencyTarget; l > 0 && s.P99 > l {
		if x := float64(s.P99-l) / float64(l); x > e {
			e = x
			why = fmt.Sprintf("p99 %s > target %s (excess %.3f)", s.P99, l, x)
		}
	}
	return e, why
}

// step moves component i's exact share by the rule above and returns the
// reason for the move ("" when the share does not move).
func (c *Controller) step(i int, k, e float64, why string, dt time.Duration) string {
	def := float64(DefaultShares)
	switch {
	case e > 0:
		// k ≥ 0 and e > 0, so the share is at least def.
		to := min(def*(1+k*e), float64(c.cfg.Cap))
		if fall := c.decayed(i, dt); c.cfg.SlowFall && to < fall {
			c.shares[i] = fall
			return fmt.Sprintf("%s, k %g, falling no faster than half-life %s", why, k, c.cfg.DecayHalfLife)
		}
		c.shares[i] = to
		if c.shares[i] == float64(c.cfg.Cap) {
			return fmt.Sprintf("%s, k %g, capped at %d", why, k, c.cfg.Cap)
		}
		return fmt.Sprintf("%s, k %g", why, k)
	case c.cfg.HoldShares || c.shares[i] == def:
		return ""
	}
	if c.shares[i] = c.decayed(i, dt); c.shares[i] == def {
		return fmt.Sprintf("no interference: back to default %d", DefaultShares)
	}
	return fmt.Sprintf("no interference: decaying toward %d after %s (half-life %s)", DefaultShares, dt, c.cfg.DecayHalfLife)
}

// decayed is component i's share after dt of decay: its excess over
// DefaultShares halved every DecayHalfLife, DefaultShares once the
// excess is at most DefaultShares/100.
func (c *Controller) decayed(i int, dt time.Duration) float64 {
	def := float64(DefaultShares)
	excess := (c.shares[i] - def) * math.Exp2(-float64(dt)/float64(c.cfg.DecayHalfLife))
	if excess <= def/100 {
		return def
	}
	return def + excess
}

// Stop returns every component to DefaultShares and returns the changes
// that does, so that a stopped controller leaves each cgroup at the share
// a new one would have. Observe may be called again afterwards; it starts
// from the default shares with the threshold already learned.
func (c *Controller) Stop() []Change {
	var out []Change
	for i, comp := range c.cfg.Components {
		c.shares[i] = float64(DefaultShares)
		if c.reported[i] != DefaultShares {
			out = append(out, Change{Component: comp.Name, From: c.reported[i], To: DefaultShares,
				Reason: fmt.Sprintf("controller stopping: back to default %d", DefaultShares)})
			c.reported[i] = DefaultShares
		}
	}
	return out
}

// Threshold returns the throughput objective in transactions per second,
// and false while it is still being learned.
func (c *Controller) Threshold() (float64, bool) { return c.threshold, c.threshold > 0 }

// Shares returns each component's share as last reported, in
// Config.Components order.
func (c *Controller) Shares() []Shares { return append([]Shares(nil), c.reported...) }

// Components returns the components the controller sets, with defaults
// applied.
func (c *Controller) Components() []Component {
	return append([]Component(nil), c.cfg.Components...)
}

// minMove is the smallest change of a share, relative to the current one,
// that the controller makes (a move to the default is always made). The
// measured throughput jitters by a few percent between periods, and each
// change is a cgroup write and a log line: following the jitter moved the
// shares by 0.05% every second on a steady load, a change the scheduler
// cannot show.
const minMove = 0.02

func worthMoving(from, to Shares) bool {
	return to == DefaultShares || math.Abs(float64(to)-float64(from)) >= minMove*float64(from)
}
