package energy

import (
	"context"
	"fmt"
	"math"
	"time"
)

// CalPoint is one step of a calibration: Active of Cores cores kept busy
// while the socket's mean power was Watts.
type CalPoint struct {
	Active int
	Cores  int
	Watts  float64
}

// FitResult is the regression's answer: the model it gives and how well
// the points follow it.
type FitResult struct {
	Params ModelParams
	// RMSE is the root mean square of the points' residuals, watts.
	RMSE float64
	// Points are the measurements the fit was made from.
	Points []CalPoint
}

func (f FitResult) String() string {
	return fmt.Sprintf("%s (fit of %d points, residual RMS %.2f W)", f.Params, len(f.Points), f.RMSE)
}

// Fit is the study's regression (§III-B2): socket power P = Ca·Pa + Ci·Pi
// with Ca active and Ci = Cores − Ca idle cores, Pa and Pi fitted by
// least squares through the origin. Because Ca + Ci is fixed, the
// socket's constant draw (uncore, the idle package) lands in Pi, as in
// the study. It needs points at two or more different loads on the same
// core count; a fit that gives impossible power (negative, or idle above
// active) is refused with ErrModel: the points do not follow the linear
// model, and no model is better than a wrong one.
func Fit(pts []CalPoint) (FitResult, error) {
	if len(pts) < 2 {
		return FitResult{}, fmt.Errorf("energy: calibration of %d points, want at least 2 (0 to N cores busy)", len(pts))
	}
	cores := pts[0].Cores
	var sxx, sxy, syy, sxp, syp float64
	loads := map[int]bool{}
	for i, p := range pts {
		if p.Cores != cores || p.Cores < 1 || p.Active < 0 || p.Active > p.Cores {
			return FitResult{}, fmt.Errorf("energy: calibration point %d: %d of %d cores busy, want 0 to %d of %d", i, p.Active, p.Cores, cores, cores)
		}
		if math.IsNaN(p.Watts) || math.IsInf(p.Watts, 0) || p.Watts < 0 {
			return FitResult{}, fmt.Errorf("energy: calibration point %d: %v W, want a finite number ≥ 0", i, p.Watts)
		}
		x, y := float64(p.Active), float64(p.Cores-p.Active)
		sxx, sxy, syy, sxp, syp = sxx+x*x, sxy+x*y, syy+y*y, sxp+x*p.Watts, syp+y*p.Watts
		loads[p.Active] = true
	}
	det := sxx*syy - sxy*sxy
	if len(loads) < 2 || det == 0 {
		return FitResult{}, fmt.Errorf("energy: calibration points all have %d of %d cores busy, want at least two different loads", pts[0].Active, cores)
	}
	p := ModelParams{
		ActiveWatts: (sxp*syy - syp*sxy) / det,
		IdleWatts:   (syp*sxx - sxp*sxy) / det,
		Cores:       cores,
	}
	var ss float64
	for _, q := range pts {
		r := q.Watts - float64(q.Active)*p.ActiveWatts - float64(q.Cores-q.Active)*p.IdleWatts
		ss += r * r
	}
	res := FitResult{Params: p, RMSE: math.Sqrt(ss / float64(len(pts))), Points: pts}
	if err := p.Validate(); err != nil {
		return res, fmt.Errorf("the fit of %d points does not follow the study's linear model: %w", len(pts), err)
	}
	return res, nil
}

// Stress keeps n cores busy until the returned stop is called.
type Stress func(n int) (stop func())

// Clock is what Calibrate needs of time: the present, and a wait that
// ends early with ctx's error.
type Clock struct {
	Now  func() time.Time
	Wait func(ctx context.Context, d time.Duration) error
}

// Calibrate is the study's measurement (§III-B2) over meter m: for n
// from 0 to cores it keeps n cores busy with stress, lets the machine
// settle for step/10, then reads the mean power over step, and hands
// each point to progress (if set) as it is measured. Fit turns the
// points into a model. m must be a RAPL meter: the model cannot
// calibrate itself.
func Calibrate(ctx context.Context, m Meter, cores int, step time.Duration, stress Stress, clk Clock, progress func(CalPoint)) ([]CalPoint, error) {
	if m.Source() != SourceRAPL {
		return nil, fmt.Errorf("%w: calibration needs a RAPL meter, got %q", ErrNoRAPL, m.Source())
	}
	if cores < 1 || step <= 0 {
		return nil, fmt.Errorf("energy: calibrate %d cores for %v each, want ≥ 1 core and a positive step", cores, step)
	}
	var pts []CalPoint
	for n := 0; n <= cores; n++ {
		p, err := calStep(ctx, m, n, cores, step, stress, clk)
		if err != nil {
			return pts, err
		}
		pts = append(pts, p)
		if progress != nil {
			progress(p)
		}
	}
	return pts, nil
}

func calStep(ctx context.Context, m Meter, n, cores int, step time.Duration, stress Stress, clk Clock) (CalPoint, error) {
	stop := stress(n)
	defer stop()
	if err := clk.Wait(ctx, step/10); err != nil {
		return CalPoint{}, err
	}
	r0, err := m.Read(clk.Now())
	if err != nil {
		return CalPoint{}, err
	}
	if err := clk.Wait(ctx, step); err != nil {
		return CalPoint{}, err
	}
	r1, err := m.Read(clk.Now())
	if err != nil {
		return CalPoint{}, err
	}
	e, err := r1.Sub(r0)
	if err != nil {
		return CalPoint{}, err
	}
	return CalPoint{Active: n, Cores: cores, Watts: e.Watts()}, nil
}
