package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/strand-ledger/strand/bench"
	"github.com/strand-ledger/strand/bench/report"
	"github.com/strand-ledger/strand/bench/workload"
)

// benchRunFlags are the flags of `strand bench` and `strand bench run`.
type benchRunFlags struct {
	rounds, preset, net string
	keep                bool
	round               bench.Round
	json, csv, html     string
	cpuProfile          string
	energy              energyFlags
}

// roundFlags are the flags that describe one round.
var roundFlags = []string{"label", "workload", "param", "rate", "tps", "load", "from", "to", "step", "step-time",
	"clients", "duration", "seed", "orgs", "batch-mode", "block-size", "batch-timeout", "state-db", "validation", "alg", "checkpoint-blocks", "checkpoint-interval", "contract-runtime", "wasm-module", "wasm-source"}

func bindBenchRun(fl *pflag.FlagSet, f *benchRunFlags) {
	r := &f.round
	fl.StringVar(&f.rounds, "rounds", "", "run the rounds of this YAML file (see docs/bench.md)")
	fl.StringVar(&f.preset, "preset", "", "run a preset's rounds: "+strings.Join(presetNames(), ", ")+" (quick), or NAME-full")
	fl.StringVar(&f.net, "net", "", "run against the network `strand net up` started in this directory, or the one a connection profile file describes (layout.json's format; see docs/bench.md), instead of an embedded one per round")
	fl.BoolVar(&f.keep, "keep", false, "keep each embedded network's directory and print where it is")
	fl.StringVar(&r.Label, "label", "", "the round's label (default: the workload's name)")
	fl.StringVar(&r.Workload, "workload", "smallbank", "workload: "+strings.Join(workload.Names(), ", "))
	fl.StringToStringVar(&r.Params, "param", nil, "workload parameters as name=value, such as --param mix=a,records=10000")
	fl.StringVar(&r.Rate.Kind, "rate", "fixed-load", "rate controller: fixed-rate (--tps), fixed-load (--load), linear-rate (--from, --to), maximum-rate (--from, --step, --step-time)")
	fl.Float64Var(&r.Rate.TPS, "tps", 0, "fixed-rate: transactions per second, all clients together")
	fl.IntVar(&r.Rate.Load, "load", 0, "fixed-load: transactions outstanding (default: one per client)")
	fl.Float64Var(&r.Rate.From, "from", 0, "linear-rate and maximum-rate: first rate, tps")
	fl.Float64Var(&r.Rate.To, "to", 0, "linear-rate: last rate, tps")
	fl.Float64Var(&r.Rate.Step, "step", 0, "maximum-rate: tps added per step (default 100)")
	fl.DurationVar(&r.Rate.StepTime, "step-time", 0, "maximum-rate: length of a step (default 2s)")
	fl.IntVar(&r.Clients, "clients", 16, "concurrent clients, each with its own identity")
	fl.DurationVar(&r.Duration, "duration", 10*time.Second, "how long the load runs")
	bindSeed(fl, &r.Seed)
	fl.IntVar(&r.Orgs, "orgs", 0, "embedded network: peer orgs, one peer each (default 2)")
	// An embedded network's: a --net network keeps its own, so these are
	// set in the round only when given (benchRounds).
	bindBatchMode(fl, &r.BatchMode)
	bindBlockSize(fl, &r.BlockSize, "")
	bindBatchTimeout(fl, &r.BatchTimeout)
	bindStateDB(fl, &r.StateDB)
	fl.StringVar(&r.Validation, "validation", "", "embedded network: the peers' MVCC check and apply, sequential (default) or parallel (pipeline.mode)")
	fl.StringVar(&r.Alg, "alg", "", "embedded network: signature algorithm of the CAs and of every node's, client's and admin's signing key, ecdsa-p256 (default) or ed25519 (TLS keys stay P-256)")
	fl.IntVar(&r.CheckpointBlocks, "checkpoint-blocks", 0, "embedded network: the orderer signs every Nth block only, peers trust its TLS stream in between (0: sign every block)")
	fl.DurationVar(&r.CheckpointInterval, "checkpoint-interval", 0, "embedded network: the orderer also signs the first block this long after the last signed one (0: no time rule)")
	fl.StringVar(&r.ContractRuntime, "contract-runtime", "", "embedded network: run the workload's contract builtin (default), as a wasm module (smallbank; built from examples/ unless --wasm-module, see --wasm-source) or external (smallbank served by the Go SDK over gRPC with mutual TLS, in the bench's process)")
	fl.StringVar(&r.WasmModule, "wasm-module", "", "embedded network, --contract-runtime wasm: the module file to run")
	fl.StringVar(&r.WasmSource, "wasm-source", "", "embedded network, --contract-runtime wasm: build the module from the C example with clang (c, the default) or the Go example with GOOS=wasip1 go build (go)")
	fl.StringVar(&f.json, "json", "", "write the results as JSON to this file")
	fl.StringVar(&f.csv, "csv", "", "write the results as CSV to this file")
	fl.StringVar(&f.html, "html", "strand-bench.html", "write the HTML report to this file (\"\": none)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the rounds to this file (embedded networks: the nodes and the load)")
	bindEnergy(fl, &f.energy)
}

func presetNames() []string { return slices.Sorted(maps.Keys(bench.Presets)) }

func benchRunCmd() *cobra.Command {
	var f benchRunFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run benchmark rounds (workload, rate, clients, duration) and report throughput, latency, resources and correctness",
		Long: `Runs benchmark rounds against an embedded network (started afresh for each
round: an orderer and a peer per org in this process, real gRPC over mutual
TLS on 127.0.0.1) or against a network 'strand net up' runs (--net DIR).
The rounds come from flags (one round), a YAML file (--rounds) or a preset
(--preset). Each round sets up its workload's state, runs its clients at
the rate controller's pace, and reports throughput (committed/s), goodput
(VALID/s), latency (end to end and by phase), counts by validation code and
per-process CPU and memory; then it checks that every peer agrees and, for
Smallbank, the money invariant. A failed check exits non-zero.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd.Context(), cmd, cmd.OutOrStdout(), f) },
	}
	bindBenchRun(cmd.Flags(), &f)
	return cmd
}

func benchCompareCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "compare A.json B.json",
		Short: "Compare two --json results side by side with ratios B/A",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := report.ReadJSON(args[0])
			if err != nil {
				return err
			}
			b, err := report.ReadJSON(args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "A = %s, B = %s\n", args[0], args[1])
			report.Compare(cmd.OutOrStdout(), a, b)
			return nil
		},
	}
}

// benchRounds returns the rounds the flags select.
func benchRounds(cmd *cobra.Command, f benchRunFlags) ([]bench.Round, error) {
	var set []string
	for _, name := range roundFlags {
		if cmd.Flags().Changed(name) {
			set = append(set, "--"+name)
		}
	}
	switch {
	case f.rounds != "" && f.preset != "":
		return nil, fmt.Errorf("--rounds and --preset both given: want one")
	case (f.rounds != "" || f.preset != "") && len(set) > 0:
		return nil, fmt.Errorf("%s describe one round, which --rounds or --preset replaces: want either", strings.Join(set, ", "))
	case f.rounds != "":
		return bench.LoadRounds(f.rounds)
	case f.preset != "":
		return bench.PresetRounds(f.preset)
	}
	r := f.round
	// The network knobs apply to an embedded network only; a round from
	// flags that did not give them leaves them to the round's defaults
	// (the same values), so that it also runs against --net.
	if !cmd.Flags().Changed(flagBatchMode) {
		r.BatchMode = ""
	}
	if !cmd.Flags().Changed(flagBlockSize) {
		r.BlockSize = 0
	}
	if !cmd.Flags().Changed(flagBatchTimeout) {
		r.BatchTimeout = 0
	}
	if !cmd.Flags().Changed(flagStateDB) {
		r.StateDB = ""
	}
	return []bench.Round{r}, nil
}

func runBench(ctx context.Context, cmd *cobra.Command, out io.Writer, f benchRunFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	rounds, err := benchRounds(cmd, f)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	ecfg, err := f.energy.config()
	if err != nil {
		return err
	}
	chooseSource(&ecfg, os.Stderr)
	exe, err := nodeExe("process networks and hogs")
	if err != nil {
		return err
	}
	t := bench.Target{Net: f.net, Keep: f.keep, Energy: ecfg, Command: []string{exe},
		Log: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }}
	var results []*bench.Result
	var failed error
	for i, r := range rounds {
		fmt.Fprintf(os.Stderr, "round %d/%d: %s\n", i+1, len(rounds), roundName(r))
		r, err := bench.Resolve(r, results)
		if err != nil {
			return err
		}
		p := newRoundProgress()
		t.Progress = p.update
		res, err := bench.Run(ctx, r, t)
		p.finish()
		if err != nil && !errors.Is(err, bench.ErrCheckFailed) {
			return err
		}
		if err != nil && failed == nil {
			failed = err
		}
		results = append(results, res)
	}
	fmt.Fprintln(out)
	report.WriteTable(out, results)
	if err := writeReports(out, f, results); err != nil {
		return err
	}
	return failed
}

func roundName(r bench.Round) string {
	if r.Label != "" {
		return r.Label
	}
	return r.Workload
}

func writeReports(out io.Writer, f benchRunFlags, rs []*bench.Result) error {
	for _, w := range []struct {
		path  string
		write func(io.Writer) error
	}{
		{f.json, func(w io.Writer) error { return report.WriteJSON(w, rs) }},
		{f.csv, func(w io.Writer) error { return report.WriteCSV(w, rs) }},
		{f.html, func(w io.Writer) error { return report.WriteHTML(w, "strand bench", rs) }},
	} {
		if w.path == "" {
			continue
		}
		file, err := os.Create(w.path)
		if err != nil {
			return err
		}
		err = w.write(file)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", w.path, err)
		}
		fmt.Fprintf(out, "wrote %s\n", w.path)
	}
	return nil
}

// roundProgress shows a round's progress: a bar with the current tps and
// the time left on a terminal, otherwise a line every 2 s.
type roundProgress struct {
	tty  bool
	bar  *progressbar.ProgressBar
	last time.Time
}

func newRoundProgress() *roundProgress {
	return &roundProgress{tty: term.IsTerminal(int(os.Stderr.Fd()))}
}

func (p *roundProgress) update(s bench.Progress) {
	left := (s.Duration - s.Elapsed).Round(100 * time.Millisecond)
	desc := fmt.Sprintf("%-20s %7.0f ops/s  %6d done  %6d committed  %5.1fs left", s.Label, s.TPS, s.Completed, s.Committed, left.Seconds())
	if !p.tty {
		if time.Since(p.last) >= 2*time.Second {
			p.last = time.Now()
			fmt.Fprintln(os.Stderr, desc)
		}
		return
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions64(s.Duration.Milliseconds(), progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	p.bar.Describe(desc)
	p.bar.Set64(s.Elapsed.Milliseconds())
}

func (p *roundProgress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
