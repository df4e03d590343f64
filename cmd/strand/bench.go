package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/strand-ledger/strand/bench"
	"github.com/strand-ledger/strand/bench/report"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
)

func benchCmd() *cobra.Command {
	var f benchRunFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run benchmarks (without a subcommand: one Smallbank round on an embedded network, with an HTML report)",
		Long: `Without a subcommand, runs 'strand bench run' with its defaults: one round of
Smallbank (Caliper's modify mix), 16 clients each keeping one transaction
outstanding for 10 s, on an embedded network, and writes strand-bench.html.
Its flags are those of 'strand bench run'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd.Context(), cmd, cmd.OutOrStdout(), f) },
	}
	bindBenchRun(cmd.Flags(), &f)
	cmd.AddCommand(benchRunCmd(), benchCompareCmd(), validatorCmd(), validatorReplayCmd(), hogCmd())
	return cmd
}

// validatorReplayCmd is the peer side of `bench validator`, run as a child
// process so that the peer's CPU time and memory are measured alone.
func validatorReplayCmd() *cobra.Command {
	var spec string
	cmd := &cobra.Command{
		Use:    "validator-replay",
		Short:  "Replay a chain into a fresh peer (used by bench validator)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return bench.ReplayMain(spec, cmd.OutOrStdout(), os.Stderr)
		},
	}
	cmd.Flags().StringVar(&spec, "spec", "", "replay spec (JSON) written by bench validator")
	cmd.MarkFlagRequired("spec")
	return cmd
}

// hogCmd is a round's co-located CPU hog (bench/hog.go), run as a child
// process of the harness.
func hogCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "hog",
		Short:  "Spin on one CPU counting ops; print the count for each line on stdin; exit at its end (used by bench rounds with hogs)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return bench.HogMain(cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}

type validatorFlags struct {
	blocks, accounts int
	blockSizes       string
	modes            string
	stateDB          string
	alg              string
	seed             uint64
	noSync           bool
	cryptoTime       time.Duration
	jsonFile         string
	csvFile          string
	htmlFile         string
	dir              string
	cpuProfile       string
	memProfile       string
	replayProfiles   string
	replayTraces     string
	// Energy (benchenergy.go).
	energy  energyFlags
	preset  string
	workers string
	reparse string
	rates   string
	repeat  int
	txs     int
	changed func(flag string) bool // the flags given on the command line
}

func validatorCmd() *cobra.Command {
	var f validatorFlags
	cmd := &cobra.Command{
		Use:   "validator",
		Short: "Replay signed Smallbank blocks into a fresh validating peer and compare with the crypto bound",
		Long: `Generates a chain of fully signed Smallbank blocks (two orgs, policy
AND('Org1.peer','Org2.peer'): a creator signature and two endorsement
signatures per transaction, an orderer signature per block), measures how
fast this machine can verify those signatures on all its cores (the crypto
bound), then replays the chain into a fresh peer and reports committed
transactions per second against that bound. Every signature is checked and,
unless --nosync, every block is fsynced before it counts as committed. The
final state is compared with the generator's model and the Smallbank
invariant is checked.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.changed = func(name string) bool { return cmd.Flags().Changed(name) }
			return runValidator(cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.blocks, "blocks", 0, "workload blocks per run (default: 10000 transactions' worth)")
	fl.StringVar(&f.blockSizes, "block-size", "100,1", "transactions per block; a comma-separated list runs each")
	fl.IntVar(&f.accounts, "accounts", 10000, "Smallbank accounts (two state keys each)")
	fl.StringVar(&f.modes, "mode", "sequential,parallel", "stage-2 validation mode(s): sequential, parallel, or both comma-separated")
	bindStateDB(fl, &f.stateDB)
	fl.StringVar(&f.alg, "alg", "ecdsa-p256", "signature algorithm: ecdsa-p256 or ed25519")
	bindSeed(fl, &f.seed)
	fl.BoolVar(&f.noSync, "nosync", false, "do not fsync the block store (not durable; for comparison only)")
	fl.DurationVar(&f.cryptoTime, "crypto-time", 2*time.Second, "how long to measure the crypto bound")
	fl.StringVar(&f.jsonFile, "json", "", "also write the results as JSON to this file")
	fl.StringVar(&f.csvFile, "csv", "", "write the results as CSV to this file: one row per run, its configuration, throughput and energy with the energy's source and model parameters")
	fl.StringVar(&f.htmlFile, "html", "", "write an HTML report to this file: the tables and a tx/s/J chart (\"\": none)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole run to this file")
	fl.StringVar(&f.memProfile, "memprofile", "", "write a Go allocation profile of the whole run to this file")
	fl.StringVar(&f.replayTraces, "replay-trace", "", "write a Go execution trace of each replay's timed part (the peer process) into this directory: runR-N.trace, named as --replay-cpuprofile names its profiles (go tool trace reads them: per-P idle gaps, wake-ups and syscalls inside a block's busy period)")
	fl.StringVar(&f.replayProfiles, "replay-cpuprofile", "", "write a Go CPU profile of each replay's timed part (the peer process) into this directory: runR-N.pprof, R the table row of the run's full-speed replay and N the replay (0 at full speed, then each --rate), both from 0")
	fl.StringVar(&f.dir, "ledger-dir", "", "the peer's ledger directory (default: a temporary directory, removed afterwards)")
	// --dir names a network everywhere else.
	deprecatedAlias(fl, "dir", "ledger-dir", func(name string) { fl.StringVar(&f.dir, name, "", "") })
	bindValidatorEnergy(fl, &f)
	return cmd
}

func runValidator(out io.Writer, f validatorFlags) error {
	if f.preset != "" {
		if err := applyPreset(f.preset, &f); err != nil {
			return err
		}
	}
	ev, err := f.variants()
	if err != nil {
		return err
	}
	sizes, err := parseInts("--block-size", f.blockSizes)
	if err != nil {
		return err
	}
	var modes []committer.Mode
	for _, m := range strings.Split(f.modes, ",") {
		mode, err := committer.ParseMode(strings.TrimSpace(m))
		if err != nil {
			return fmt.Errorf("--mode: %w", err)
		}
		modes = append(modes, mode)
	}
	alg, err := identity.ParseAlgorithm(f.alg)
	if err != nil {
		return fmt.Errorf("--alg: %w", err)
	}
	if err := backend.Check(f.stateDB); err != nil {
		return fmt.Errorf("--state-db: %w", err)
	}
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	exe, err := nodeExe("the peer process")
	if err != nil {
		return err
	}
	if f.replayTraces != "" {
		if err := os.MkdirAll(f.replayTraces, 0o755); err != nil {
			return fmt.Errorf("--replay-trace: %w", err)
		}
		if f.replayTraces, err = filepath.Abs(f.replayTraces); err != nil {
			return fmt.Errorf("--replay-trace: %w", err)
		}
	}
	if f.replayProfiles != "" {
		if err := os.MkdirAll(f.replayProfiles, 0o755); err != nil {
			return fmt.Errorf("--replay-cpuprofile: %w", err)
		}
		if f.replayProfiles, err = filepath.Abs(f.replayProfiles); err != nil {
			return fmt.Errorf("--replay-cpuprofile: %w", err)
		}
	}
	var results []*bench.ValidatorResult
	for _, size := range sizes {
		blocks := f.blocks
		if blocks == 0 {
			blocks = max(f.txs/size, 1)
		}
		for _, mode := range modes {
			for _, v := range ev.runs {
				cfg := bench.ValidatorConfig{
					Chain: bench.ChainSpec{Accounts: f.accounts, Blocks: blocks, BlockSize: size, Seed: int64(f.seed), Alg: alg},
					Mode:  mode, StateDB: f.stateDB, NoSync: f.noSync, CryptoTime: f.cryptoTime, Dir: f.dir,
					Progress:      newProgress(fmt.Sprintf("block size %d, %s%s", size, mode, v.label())),
					ReplayCommand: []string{exe, "bench", "validator-replay"},
					Workers:       v.workers, Reparse: v.reparse, Energy: ev.energy, Rates: ev.rates,
				}
				if f.replayTraces != "" {
					cfg.TracePrefix = filepath.Join(f.replayTraces, fmt.Sprintf("run%d-", len(results)))
				}
				if f.replayProfiles != "" {
					cfg.ProfilePrefix = filepath.Join(f.replayProfiles, fmt.Sprintf("run%d-", len(results)))
				}
				rs, err := bench.RunValidatorRates(cfg)
				if err != nil {
					return err
				}
				results = append(results, rs...)
			}
		}
	}
	if f.memProfile != "" {
		if err := writeHeapProfile(f.memProfile); err != nil {
			return err
		}
	}
	report.WriteValidatorTable(out, results)
	report.WriteValidatorEnergyTable(out, results)
	return writeValidatorFiles(out, f, results)
}

// writeValidatorFiles writes the --json, --csv and --html files.
func writeValidatorFiles(out io.Writer, f validatorFlags, rs []*bench.ValidatorResult) error {
	for _, w := range []struct {
		path  string
		write func(io.Writer) error
	}{
		{f.jsonFile, func(w io.Writer) error {
			raw, err := json.MarshalIndent(rs, "", "  ")
			if err != nil {
				return err
			}
			_, err = w.Write(append(raw, '\n'))
			return err
		}},
		{f.csvFile, func(w io.Writer) error { return report.WriteValidatorCSV(w, rs) }},
		{f.htmlFile, func(w io.Writer) error { return report.WriteValidatorHTML(w, "strand bench validator", rs) }},
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
		fmt.Fprintf(out, "\nwrote %s\n", w.path)
	}
	return nil
}

func parseInts(flag, s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s %q: want positive integers separated by commas", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// newProgress returns a progress callback: a bar per phase on a terminal,
// otherwise one line when each phase ends.
func newProgress(label string) func(phase string, done, total int) {
	tty := term.IsTerminal(int(os.Stderr.Fd()))
	var bar *progressbar.ProgressBar
	var current string
	return func(phase string, done, total int) {
		if !tty {
			if done == total {
				fmt.Fprintf(os.Stderr, "%s: %s done (%d)\n", label, phase, total)
			}
			return
		}
		if phase != current || bar == nil {
			if bar != nil {
				bar.Finish()
			}
			current = phase
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
				progressbar.OptionSetDescription(fmt.Sprintf("%-28s %-12s", label, phase)),
				progressbar.OptionSetWidth(30), progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish())
		}
		bar.Set(done)
		if done == total {
			bar.Finish()
		}
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}
