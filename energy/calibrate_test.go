package energy

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestFitRecoversTheModel: points drawn from P = Ca·Pa + Ci·Pi with noise
// give back Pa and Pi.
func TestFitRecoversTheModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		active, idle float64
		cores        int
		noise        float64
	}{
		{8.5, 1.44, 10, 0},    // the study's Xeon 4114 socket
		{8.5, 1.44, 10, 0.3},  // with measurement noise
		{12.0, 3.0, 4, 0.5},   // a desktop part
		{6.0, 6.0, 2, 0},      // no idle saving at all
		{30.0, 0.0, 16, 0.05}, // perfect power gating
	} {
		var pts []CalPoint
		for n := 0; n <= tc.cores; n++ {
			w := float64(n)*tc.active + float64(tc.cores-n)*tc.idle + tc.noise*(rng.Float64()*2-1)
			pts = append(pts, CalPoint{Active: n, Cores: tc.cores, Watts: max(w, 0)})
		}
		f, err := Fit(pts)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		tol := 1e-9 + 2*tc.noise
		if math.Abs(f.Params.ActiveWatts-tc.active) > tol || math.Abs(f.Params.IdleWatts-tc.idle) > tol || f.Params.Cores != tc.cores {
			t.Errorf("%+v: fit %v, want active %v, idle %v within %v", tc, f, tc.active, tc.idle, tol)
		}
		if tc.noise == 0 && f.RMSE > 1e-9 {
			t.Errorf("%+v: residual %v on exact points", tc, f.RMSE)
		}
	}
}

func TestFitRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		pts  []CalPoint
		want string
	}{
		{"one point", []CalPoint{{0, 4, 10}}, "want at least 2"},
		{"one load", []CalPoint{{2, 4, 10}, {2, 4, 11}}, "two different loads"},
		{"mixed core counts", []CalPoint{{0, 4, 10}, {1, 8, 20}}, "point 1"},
		{"more busy than cores", []CalPoint{{0, 4, 10}, {5, 4, 20}}, "5 of 4"},
		{"negative power", []CalPoint{{0, 4, 10}, {1, 4, -3}}, "-3 W"},
		// Power that falls as cores get busy: idle would exceed active.
		{"falling power", []CalPoint{{0, 2, 20}, {1, 2, 15}, {2, 2, 10}}, "idle_watts"},
	} {
		_, err := Fit(tc.pts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestCalibrateOverRAPL runs the calibration loop against the recorded
// two-socket powercap tree: a fake machine advances the package counters
// at the power of n busy cores whenever the clock moves, and the fit of
// what the RAPL meter read gives back that machine's per-core power.
func TestCalibrateOverRAPL(t *testing.T) {
	root := powercap(t, "powercap.txt")
	m, err := OpenRAPL(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	const active, idle, cores = 9.0, 2.0, 4
	busy := -1
	now := t0
	uj := map[string]uint64{"intel-rapl:0": 100000000, "intel-rapl:1": 50000000}
	clk := Clock{
		Now: func() time.Time { return now },
		Wait: func(_ context.Context, d time.Duration) error {
			// Socket 0 runs the stress; socket 1 idles at 5 W.
			w0 := float64(busy)*active + float64(cores-busy)*idle
			uj["intel-rapl:0"] += uint64(w0 * d.Seconds() * 1e6)
			uj["intel-rapl:1"] += uint64(5 * d.Seconds() * 1e6)
			for z, v := range uj {
				setUJ(t, root, z, v)
			}
			now = now.Add(d)
			return nil
		},
	}
	var seen []int
	stress := func(n int) func() { busy = n; seen = append(seen, n); return func() { busy = -1 } }
	pts, err := Calibrate(context.Background(), m, cores, 30*time.Second, stress, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != cores+1 || seen[0] != 0 || seen[cores] != cores {
		t.Fatalf("stressed %v, want 0..%d", seen, cores)
	}
	f, err := Fit(pts)
	if err != nil {
		t.Fatal(err)
	}
	// The meter adds both packages: socket 1's 5 W lands in idle power,
	// spread over the stressed socket's cores, as the study's fit would.
	if math.Abs(f.Params.ActiveWatts-(active+5.0/cores)) > 1e-3 || math.Abs(f.Params.IdleWatts-(idle+5.0/cores)) > 1e-3 {
		t.Errorf("fit %v, want active %v, idle %v", f, active+5.0/cores, idle+5.0/cores)
	}
}

func TestCalibrateNeedsRAPL(t *testing.T) {
	m, err := OpenModel(ModelParams{}, []int{1}, trace{1: 0}.read, t0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Calibrate(context.Background(), m, 2, time.Second, nil, Clock{}, nil)
	if !errors.Is(err, ErrNoRAPL) {
		t.Errorf("calibrating the model: %v, want ErrNoRAPL", err)
	}
}

func TestModelFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/model.yaml"
	p := ModelParams{ActiveWatts: 7.25, IdleWatts: 1.5, Cores: 3}
	if err := SaveModel(path, p, "test"); err != nil {
		t.Fatal(err)
	}
	got, err := LoadModel(path)
	if err != nil || got != p {
		t.Fatalf("LoadModel = %v, %v; want %v", got, err, p)
	}
	for _, tc := range []struct{ body, want string }{
		{"active_watts: -1\n", "active_watts"},
		{"active_watts: 2\nidle_watts: 3\n", "idle_watts"},
		{"idle_watts: -0.1\n", "idle_watts"},
		{"cores: -1\n", "cores"},
		{"active_wats: 2\n", "active_wats"},
	} {
		write(t, dir, "bad.yaml", strings.TrimSuffix(tc.body, "\n"))
		if _, err := LoadModel(dir + "/bad.yaml"); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bad.yaml") {
			t.Errorf("%q: %v, want an error naming bad.yaml and %q", tc.body, err, tc.want)
		}
	}
}
