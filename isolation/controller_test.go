package isolation

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestControllerScripts runs testdata/controller.txt with
// github.com/cockroachdb/datadriven (go test -rewrite regenerates the
// expected output). A case is
//
//	run KEY=VALUE...   (omitted keys take the defaults)
//	<command lines>
//	----
//	<output>
//
// Keys: threshold=TPS latency=DURATION calibration=DURATION fraction=F
// halflife=DURATION cap=SHARES delay=DURATION hold (HoldShares),
// slowfall (SlowFall) and
// comps=NAME:K,NAME:K... (Components). An invalid configuration prints
// "error: ..." and runs no command. Commands:
//
//	observe @T tps=X [p99=D] [delay=S] [idle] [unscraped]   Observe a sample ending at time T
//	probe DELAY                       Probe with a delay measured between samples
//	stop                              Stop
//	threshold                         print Threshold
//	shares                            print Shares
//
// Times are durations after an arbitrary epoch. An observe or stop line is
// echoed, followed by "=> -" when nothing changes, by one indented line per
// change otherwise, or by "=> error: ...".
func TestControllerScripts(t *testing.T) {
	datadriven.RunTest(t, "testdata/controller.txt", func(t *testing.T, d *datadriven.TestData) string {
		return strings.Join(runController(t, d), "\n")
	})
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func runController(t *testing.T, d *datadriven.TestData) []string {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		d.Fatalf(t, format, args...)
	}
	if d.Cmd != "run" {
		fail("case starts with %q, want \"run key=value...\"", d.Cmd)
	}
	cfg := scriptConfig(t, d)
	c, err := New(cfg)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	var cmds, out []string
	if d.Input != "" {
		cmds = strings.Split(d.Input, "\n")
	}
	for _, cmd := range cmds {
		f := strings.Fields(cmd)
		switch {
		case len(f) >= 3 && f[0] == "observe":
			s, now := scriptSample(t, f[1:])
			changes, err := c.Observe(s, now)
			out = append(out, renderChanges(cmd, changes, err)...)
		case len(f) == 2 && f[0] == "probe":
			d, err := time.ParseDuration(f[1])
			if err != nil {
				fail("probe delay %q: %v", f[1], err)
			}
			changes, err := c.Probe(d)
			out = append(out, renderChanges(cmd, changes, err)...)
		case len(f) == 1 && f[0] == "stop":
			out = append(out, renderChanges(cmd, c.Stop(), nil)...)
		case len(f) == 1 && f[0] == "threshold":
			if tps, ok := c.Threshold(); ok {
				out = append(out, fmt.Sprintf("threshold => %.1f tps", tps))
			} else {
				out = append(out, "threshold => calibrating")
			}
		case len(f) == 1 && f[0] == "shares":
			var parts []string
			for i, s := range c.Shares() {
				parts = append(parts, fmt.Sprintf("%s=%d", c.Components()[i].Name, s))
			}
			out = append(out, "shares => "+strings.Join(parts, " "))
		default:
			fail("bad command %q", cmd)
		}
	}
	return out
}

func scriptConfig(t *testing.T, d *datadriven.TestData) Config {
	var cfg Config
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "threshold":
			d.ScanArgs(t, a.Key, &cfg.Threshold)
		case "latency":
			d.ScanArgs(t, a.Key, &cfg.LatencyTarget)
		case "calibration":
			d.ScanArgs(t, a.Key, &cfg.Calibration)
		case "fraction":
			d.ScanArgs(t, a.Key, &cfg.CalibrationFraction)
		case "halflife":
			d.ScanArgs(t, a.Key, &cfg.DecayHalfLife)
		case "cap":
			var n int
			d.ScanArgs(t, a.Key, &n)
			cfg.Cap = Shares(n)
		case "delay":
			d.ScanArgs(t, a.Key, &cfg.DelayTarget)
		case "hold":
			cfg.HoldShares = true
		case "slowfall":
			cfg.SlowFall = true
		case "comps":
			cfg.Components = []Component{}
			for _, v := range strings.Split(strings.Join(a.Vals, ","), ",") {
				name, k, ok := strings.Cut(v, ":")
				gain, err := strconv.ParseFloat(k, 64)
				if !ok || err != nil {
					d.Fatalf(t, "comps entry %q, want NAME:K", v)
				}
				cfg.Components = append(cfg.Components, Component{Name: name, K: gain})
			}
		default:
			d.Fatalf(t, "%q: unknown key", a.String())
		}
	}
	return cfg
}

// scriptSample parses "@T [tps=X] [p99=D] [delay=S] [idle] [unscraped]".
func scriptSample(t *testing.T, f []string) (Sample, time.Time) {
	t.Helper()
	if !strings.HasPrefix(f[0], "@") {
		t.Fatalf("time %q, want @DURATION", f[0])
	}
	off, err := time.ParseDuration(f[0][1:])
	if err != nil {
		t.Fatalf("time %q: %v", f[0], err)
	}
	var s Sample
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "tps":
			s.Throughput, err = strconv.ParseFloat(v, 64)
		case "p99":
			s.P99, err = time.ParseDuration(v)
		case "idle":
			s.Idle = true
		case "delay":
			s.Delay, err = time.ParseDuration(v)
		case "unscraped":
			s.Unscraped = true
		default:
			err = fmt.Errorf("unknown field, want tps=, p99=, delay=, idle or unscraped")
		}
		if err != nil {
			t.Fatalf("sample field %q: %v", kv, err)
		}
	}
	return s, epoch.Add(off)
}

func renderChanges(cmd string, changes []Change, err error) []string {
	switch {
	case err != nil:
		return []string{cmd + " => error: " + err.Error()}
	case len(changes) == 0:
		return []string{cmd + " => -"}
	}
	out := []string{cmd + " =>"}
	for _, ch := range changes {
		out = append(out, "  "+ch.String())
	}
	return out
}

func TestWeightMapping(t *testing.T) {
	for _, c := range []struct {
		s Shares
		w int
	}{
		{MinShares, MinWeight}, {DefaultShares, DefaultWeight}, {2048, 200}, {10240, 1000},
		{CapLimit, MaxWeight}, {MaxShares, MaxWeight}, {512, 50}, {5, 1}, {6, 1}, {15, 1}, {16, 2},
	} {
		if got := c.s.Weight(); got != c.w {
			t.Errorf("Shares(%d).Weight() = %d, want %d", c.s, got, c.w)
		}
	}
	// Every share the controller may set survives the round trip through a
	// v2 weight to within one weight step.
	for s := DefaultShares; s <= CapLimit; s += 37 {
		back := SharesOfWeight(s.Weight())
		if d := back - s; d > 6 || d < -6 {
			t.Fatalf("SharesOfWeight(Shares(%d).Weight() = %d) = %d, more than half a weight step away", s, s.Weight(), back)
		}
	}
}

// TestControllerInvariants drives controllers with random configurations
// and samples and checks the invariants stated in controller.go after
// every step: shares stay in [DefaultShares, Cap]; a component with gain 0
// never moves; each change starts where the last one for its component
// ended and moves by a whole share; Stop leaves every share at the
// default.
func TestControllerInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	for run := 0; run < 200; run++ {
		cfg := Config{
			Threshold:     float64(rng.IntN(3)) * 500, // 0: learned
			LatencyTarget: time.Duration(rng.IntN(3)) * 50 * time.Millisecond,
			DelayTarget:   time.Duration(rng.IntN(3)) * time.Millisecond,
			Calibration:   time.Duration(1+rng.IntN(20)) * time.Second,
			DecayHalfLife: time.Duration(1+rng.IntN(60)) * time.Second,
			HoldShares:    rng.IntN(4) == 0,
			Cap:           DefaultShares + Shares(rng.IntN(int(CapLimit-DefaultShares)+1)),
			Components:    []Component{{"orderer", rng.Float64() * 10}, {"peer", rng.Float64() * MaxK}, {"contract", 0}},
		}
		c, err := New(cfg)
		if err != nil {
			t.Fatalf("New(%+v): %v", cfg, err)
		}
		last := []Shares{DefaultShares, DefaultShares, DefaultShares}
		now := epoch
		check := func(changes []Change, step int) {
			t.Helper()
			for _, ch := range changes {
				i := slices.IndexFunc(cfg.Components, func(c Component) bool { return c.Name == ch.Component })
				switch {
				case i < 0 || ch.Reason == "":
					t.Fatalf("run %d step %d: change %v names no component or has no reason", run, step, ch)
				case ch.From != last[i] || ch.To == ch.From:
					t.Fatalf("run %d step %d: change %v, but %s was last at %d", run, step, ch, ch.Component, last[i])
				case ch.To < DefaultShares || ch.To > cfg.Cap:
					t.Fatalf("run %d step %d: change %v leaves [%d, %d]", run, step, ch, DefaultShares, cfg.Cap)
				case cfg.Components[i].K == 0:
					t.Fatalf("run %d step %d: change %v to a component with gain 0", run, step, ch)
				}
				last[i] = ch.To
			}
			if !slices.Equal(c.Shares(), last) {
				t.Fatalf("run %d step %d: Shares() = %v, changes add up to %v", run, step, c.Shares(), last)
			}
		}
		for step := 0; step < 100; step++ {
			now = now.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
			s := Sample{Throughput: rng.Float64() * 1000, P99: time.Duration(rng.IntN(300)) * time.Millisecond, Idle: rng.IntN(10) == 0,
				Delay: time.Duration(rng.IntN(5000)) * time.Microsecond, Unscraped: rng.IntN(8) == 0}
			changes, err := c.Observe(s, now)
			if err != nil {
				t.Fatalf("run %d step %d: Observe(%+v): %v", run, step, s, err)
			}
			check(changes, step)
		}
		check(c.Stop(), -1)
		if !slices.Equal(last, []Shares{DefaultShares, DefaultShares, DefaultShares}) {
			t.Fatalf("run %d: after Stop shares are %v, want all %d", run, last, DefaultShares)
		}
	}
}
