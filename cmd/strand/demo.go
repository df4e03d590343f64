package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/bench"
	"github.com/strand-ledger/strand/bench/rate"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
)

type demoFlags struct {
	orgs, accounts, clients, maxTxs int
	duration, timeout               time.Duration
	seed                            uint64
	keep                            bool
	cpuProfile                      string
	net                             string
	batchMode, stateDB              string
	checkpoint                      int
}

func demoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start an embedded network and run a short Smallbank load against it",
		Long: `Starts a complete network in this process on a temporary directory: an
orderer and one peer per org, each with its own ledger, talking real gRPC
over mutual TLS on 127.0.0.1. Creates Smallbank accounts, then runs
concurrent clients (half of them in each org, each talking to its own org's
peer) submitting Caliper's Smallbank "modify" mix, endorsed by every org
(policy AND over all orgs), ordered, validated and committed with every
signature checked. Prints throughput, latency and counts by validation code,
then checks the Smallbank invariant and that every peer holds the same state.`,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fl := cmd.Flags()
	fl.IntVar(&f.orgs, "orgs", 2, "peer orgs (one peer each)")
	fl.IntVar(&f.accounts, "accounts", 1000, "Smallbank accounts")
	fl.IntVar(&f.clients, "clients", 16, "concurrent clients, each with one transaction outstanding")
	fl.DurationVar(&f.duration, "duration", 10*time.Second, "how long to run the load")
	bindBlockSize(fl, &f.maxTxs, "")
	bindBatchTimeout(fl, &f.timeout)
	bindBatchMode(fl, &f.batchMode)
	bindStateDB(fl, &f.stateDB)
	fl.IntVar(&f.checkpoint, "checkpoint-blocks", 0, "the orderer signs every Nth block only; peers trust its TLS stream in between (0: sign every block)")
	bindSeed(fl, &f.seed)
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the load to this file")
	fl.StringVar(&f.net, "net", "", "run the load against the network `strand net up` started in this directory instead of an embedded one")
	fl.BoolVar(&f.keep, "keep", false, "keep the network's directory (crypto, config, ledgers) and print where it is")
	return cmd
}

func (f demoFlags) validate() error {
	switch {
	case f.orgs < 1 || f.orgs > 16:
		return fmt.Errorf("--orgs %d: want 1 to 16", f.orgs)
	case f.accounts < 2 || f.accounts > 1_000_000:
		return fmt.Errorf("--accounts %d: want 2 to 1000000", f.accounts)
	case f.clients < 1 || f.clients > 1024:
		return fmt.Errorf("--clients %d: want 1 to 1024", f.clients)
	case f.duration <= 0:
		return fmt.Errorf("--duration %v: want more than 0", f.duration)
	case f.maxTxs < 1:
		return fmt.Errorf("--block-size %d: want at least 1", f.maxTxs)
	case f.timeout < time.Millisecond:
		return fmt.Errorf("--batch-timeout %v: want at least 1ms", f.timeout)
	case checkBatchMode(f.batchMode) != nil:
		return checkBatchMode(f.batchMode)
	case f.checkpoint < 0 || f.checkpoint > 1_000_000:
		return fmt.Errorf("--checkpoint-blocks %d: want 0 (sign every block) to 1000000", f.checkpoint)
	}
	return nil
}

const demoBalance = 1_000_000

// round is the benchmark round the demo runs: Caliper's Smallbank modify
// mix, each client keeping one transaction outstanding.
func (f demoFlags) round() bench.Round {
	r := bench.Round{Label: "demo", Workload: "smallbank", Clients: f.clients, Duration: f.duration, Seed: f.seed,
		Params: map[string]string{"accounts": strconv.Itoa(f.accounts), "balance": strconv.Itoa(demoBalance)},
		Rate:   rate.Config{Kind: "fixed-load", Load: f.clients}}
	if f.net == "" {
		r.Orgs, r.BatchMode, r.BlockSize, r.BatchTimeout, r.CheckpointBlocks, r.StateDB = f.orgs, f.batchMode, f.maxTxs, f.timeout, f.checkpoint, f.stateDB
	}
	return r
}

func runDemo(ctx context.Context, out io.Writer, f demoFlags) error {
	if err := f.validate(); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	// The crypto bound is measured on the idle network before the load
	// and again after it, and the two are averaged: on a shared machine
	// the capacity drifts (the hypervisor's steal), and a bound taken at
	// one moment alone can be far from the load's.
	alg := identity.ECDSAP256
	if f.net != "" {
		alg = netAlg(f.net)
	}
	before, err := measureRates(alg)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	p := newRoundProgress()
	res, err := bench.Run(ctx, f.round(), bench.Target{Net: f.net, Keep: f.keep, Progress: p.update,
		Log: func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }})
	p.finish()
	stopProfile()
	if res == nil {
		return err
	}
	orgs := f.orgs
	if f.net != "" {
		if l, lerr := localnet.Load(f.net); lerr == nil {
			orgs = len(l.Orgs())
		}
	}
	after, err := measureRates(alg)
	if err != nil {
		return err
	}
	printDemo(out, f, res)
	printBound(out, orgs, res, before, after)
	fmt.Fprintln(out)
	for _, c := range res.Checks {
		fmt.Fprintln(out, c)
	}
	return err
}

func printDemo(out io.Writer, f demoFlags, r *bench.Result) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nclients\tduration\tsubmitted\tcommitted\tthroughput tx/s\tgoodput tx/s\tp50 ms\tp95 ms\tp99 ms\tmax ms\n")
	fmt.Fprintf(tw, "%d\t%.3fs\t%d\t%d\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\n", f.clients, r.ElapsedS, r.Sent, r.Committed,
		r.ThroughputTPS, r.GoodputTPS, r.Latency.P50, r.Latency.P95, r.Latency.P99, r.Latency.Max)
	tw.Flush()
	fmt.Fprintln(out, "\nvalidation code            transactions")
	for _, c := range r.Codes() {
		fmt.Fprintf(out, "%-26s %12d\n", c, r.ByCode[c])
	}
	// Refusals by kind, each with an example: Smallbank's send_payment
	// aborts on insufficient funds (endorse 409), as in H-Store.
	for _, class := range slices.Sorted(maps.Keys(r.ByError)) {
		fmt.Fprintf(out, "%-26s %12d   (e.g. %s)\n", "not committed: "+class, r.ByError[class], strings.TrimPrefix(r.Examples[class], "client: "))
	}
	fmt.Fprintln(out, "latency = end to end per transaction: propose, endorse on every org, order, validate, durable commit")
}

func measureRates(alg identity.Algorithm) (bench.CryptoRates, error) {
	return bench.MeasureCryptoRates(alg, 0, time.Second, 1500)
}

// netAlg is the algorithm of the network in dir (net up --alg); P-256
// when that cannot be read (the load then fails on its own with the
// reason).
func netAlg(dir string) identity.Algorithm {
	l, err := localnet.Load(dir)
	if err != nil {
		return identity.ECDSAP256
	}
	alg, err := l.Alg()
	if err != nil {
		return identity.ECDSAP256
	}
	return alg
}

// printBound compares the load's throughput with the network's crypto
// bound at the mean of the signing and verifying rates measured before
// and after the load, and the CPU per transaction with what its
// signatures cost.
func printBound(out io.Writer, orgs int, r *bench.Result, before, after bench.CryptoRates) {
	perBlock := float64(r.Committed) / float64(max(r.Blocks, 1))
	rates := bench.MeanRates(before, after)
	b := bench.NetworkBound(rates, orgs, max(perBlock, 1))
	fmt.Fprintf(out, "\nend-to-end crypto bound: %.0f tx/s (%.2f signatures created and %.2f verified per transaction,\n"+
		"  %.0f signs/s and %.0f verifies/s on %d cores, %.1f transactions per block): throughput is %.0f%% of it\n",
		b.TxPerSec, b.SignsPerTx, b.VerifiesPerTx, rates.SignPerSec, rates.VerifyPerSec, rates.Workers, perBlock, 100*r.ThroughputTPS/b.TxPerSec)
	if rates.Alg == identity.Ed25519 {
		fmt.Fprintf(out, "  Ed25519 identities: the bound checks every signature alone under ZIP-215, with precomputed tables for known keys as the nodes' single checks do; the peers' stage 1 checks a block's in batches, which costs less\n")
		if b.StockTxPerSec > 0 {
			fmt.Fprintf(out, "  with the library's single check alone (%.0f verifies/s against %.0f) it would be %.0f tx/s, and throughput %.0f%% of that\n",
				rates.StockVerifyPerSec, rates.VerifyPerSec, b.StockTxPerSec, 100*r.ThroughputTPS/b.StockTxPerSec)
		}
	} else if b.StockTxPerSec > 0 {
		fmt.Fprintf(out, "  the bound verifies as the nodes do (precomputed tables for known P-256 keys, %.0f verifies/s); "+
			"with crypto/ecdsa alone (%.0f verifies/s) it would be %.0f tx/s, and throughput %.0f%% of that\n",
			rates.VerifyPerSec, rates.StockVerifyPerSec, b.StockTxPerSec, 100*r.ThroughputTPS/b.StockTxPerSec)
	}
	bb, ba := bench.NetworkBound(before, orgs, max(perBlock, 1)), bench.NetworkBound(after, orgs, max(perBlock, 1))
	fmt.Fprintf(out, "  the bound is the mean of %.0f tx/s measured before the load and %.0f after it\n", bb.TxPerSec, ba.TxPerSec)
	if m := r.Usage.Machine; m.Available && before.Machine.Available && after.Machine.Available {
		fmt.Fprintf(out, "  the machine's cores during the load: %s; stolen %.0f%% and %.0f%% while measuring the bound\n",
			m, before.Machine.StealPct, after.Machine.StealPct)
	}
	if r.Committed == 0 {
		return
	}
	crypto := b.SignsPerTx*us(rates.SignCPU) + b.VerifiesPerTx*us(rates.VerifyCPU)
	// CPU time of a process = its average % of one core × the elapsed time.
	var total float64
	parts := make([]string, 0, len(r.Usage.Procs))
	for _, p := range r.Usage.Procs {
		if p.Err != "" {
			fmt.Fprintf(os.Stderr, "demo: could not read the CPU time of %s: %s\n", p.Name, p.Err)
			return
		}
		perTx := p.CPUPercent / 100 * r.ElapsedS * 1e6 / float64(r.Committed)
		total += perTx
		parts = append(parts, fmt.Sprintf("%s %.0f", p.Name, perTx))
	}
	fmt.Fprintf(out, "CPU per committed transaction: %.0f µs (%s);\n  its signatures at the measured costs: %.0f µs = %.0f%% of it\n",
		total, strings.Join(parts, ", "), crypto, 100*crypto/total)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
