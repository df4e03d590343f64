package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/energy"
)

func energyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "energy",
		Short: "Energy meters: calibrate the per-core model from RAPL, show the model in force",
	}
	cmd.AddCommand(energyCalibrateCmd(), energyModelCmd())
	return cmd
}

type calibrateFlags struct {
	root  string
	cores int
	step  time.Duration
	save  string
	model energyFlags
}

func energyCalibrateCmd() *cobra.Command {
	var f calibrateFlags
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Fit the per-core power model to RAPL with 0..N cores busy (the energy study's §III-B2)",
		Long: `Where the machine has RAPL (Linux powercap), keeps 0, 1, ... N cores busy in
turn, reads the socket power (packages + DRAM) over --step for each, and fits
P = busy·active_watts + idle·idle_watts by least squares, as the energy study
did. --save writes the fit as a model file for --energy-model. Where there is
no RAPL (most virtual machines) it says so and shows the model in force: the
model cannot calibrate itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCalibrate(cmd.Context(), cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.root, "powercap-root", energy.DefaultPowercapRoot, "the powercap sysfs directory")
	fl.IntVar(&f.cores, "cores", runtime.NumCPU(), "cores to stress, 0 to N")
	fl.DurationVar(&f.step, "step", 30*time.Second, "measurement per step (the study's: 30s)")
	fl.StringVar(&f.save, "save", "", "write the fitted model to this file")
	bindEnergy(fl, &f.model)
	return cmd
}

func energyModelCmd() *cobra.Command {
	var f energyFlags
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Show the energy model in force (defaults, a model file and flags) and whether this machine has RAPL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if err := showModel(out, f); err != nil {
				return err
			}
			_, err := energy.OpenRAPL(energy.DefaultPowercapRoot, nil)
			switch {
			case err == nil:
				fmt.Fprintln(out, "RAPL: present and readable; benchmarks use it unless --energy-source model")
			default:
				fmt.Fprintf(out, "RAPL: %v\n", err)
			}
			return nil
		},
	}
	bindEnergy(cmd.Flags(), &f)
	return cmd
}

// showModel prints the model the flags put in force.
func showModel(out io.Writer, f energyFlags) error {
	c, err := f.config()
	if err != nil {
		return err
	}
	from := "the energy study's defaults"
	if f.modelFile != "" {
		from = f.modelFile
	}
	p := c.Model
	p.EnsureDefaults()
	fmt.Fprintf(out, "model in force: %s\n  from %s", energy.Label(energy.SourceModel, &p), from)
	if f.model.ActiveWatts > 0 || f.model.IdleWatts > 0 || f.model.Cores > 0 {
		fmt.Fprint(out, ", with flags over it")
	}
	fmt.Fprintf(out, "\n  energy = %.2f W × busy core-seconds + %.2f W × idle core-seconds of %d cores (a benchmark charges the peer's --workers where set)\n",
		p.ActiveWatts, p.IdleWatts, p.Cores)
	return nil
}

func runCalibrate(ctx context.Context, out io.Writer, f calibrateFlags) error {
	if f.cores < 1 || f.step < time.Second {
		return fmt.Errorf("--cores %d, --step %v: want at least 1 core and 1s", f.cores, f.step)
	}
	m, err := energy.OpenRAPL(f.root, nil)
	if errors.Is(err, energy.ErrNoRAPL) {
		fmt.Fprintf(out, "No RAPL on this machine (%v): nothing to calibrate against.\n", err)
		fmt.Fprintln(out, "Every energy figure here comes from the model, an estimate from measured CPU time:")
		return showModel(out, f.model)
	}
	if err != nil {
		fmt.Fprintf(out, "RAPL is present but cannot be read: calibration needs read access to energy_uj (root since Linux 5.10).\n")
		if serr := showModel(out, f.model); serr != nil {
			return serr
		}
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	clk := energy.Clock{Now: time.Now, Wait: func(ctx context.Context, d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	fmt.Fprintf(out, "calibrating over %s: 0 to %d cores busy, %v each\n", f.root, f.cores, f.step)
	pts, err := energy.Calibrate(ctx, m, f.cores, f.step, spin, clk, func(p energy.CalPoint) {
		fmt.Fprintf(out, "  %d of %d cores busy: %.2f W\n", p.Active, p.Cores, p.Watts)
	})
	if err != nil {
		return err
	}
	fit, err := energy.Fit(pts)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "fit: %s\n", fit)
	if f.save != "" {
		host, _ := os.Hostname()
		origin := fmt.Sprintf("strand energy calibrate on %s at %s: RAPL, 0..%d cores busy, %v each, residual RMS %.2f W",
			host, time.Now().UTC().Format(time.RFC3339), f.cores, f.step, fit.RMSE)
		if err := energy.SaveModel(f.save, fit.Params, origin); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s (use it with --energy-model)\n", f.save)
	}
	return nil
}

// spin keeps n cores busy, one locked thread each, as `stress -c n` does.
func spin(n int) (stop func()) {
	var done atomic.Bool
	for range n {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			x := uint64(1)
			for !done.Load() {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		}()
	}
	return func() { done.Store(true) }
}
