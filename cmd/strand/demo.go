package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/bench"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

type demoFlags struct {
	orgs, accounts, clients, maxTxs int
	duration, timeout               time.Duration
	seed                            int64
	keep                            bool
	cpuProfile                      string
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
	fl.IntVar(&f.maxTxs, "block-size", 100, "most transactions per block")
	fl.DurationVar(&f.timeout, "batch-timeout", 2*time.Millisecond, "cut a block after this long even if not full")
	fl.Int64Var(&f.seed, "seed", 1, "random seed of the workload")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the load to this file")
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
	}
	return nil
}

// demoNet is the embedded network.
type demoNet struct {
	dir     string
	layout  *localnet.Layout
	ch      *node.ChannelConfig
	orderer *node.Orderer
	peers   []*node.Peer
	orgs    []*client.Contract // one client per org, through its own peer
	conns   []*client.Gateway
}

func startDemoNet(f demoFlags) (_ *demoNet, err error) {
	dir, err := os.MkdirTemp("", "strand-demo-")
	if err != nil {
		return nil, err
	}
	n := &demoNet{dir: dir}
	defer func() {
		if err != nil {
			n.close(false)
		}
	}()
	n.layout, err = localnet.Generate(dir, localnet.Spec{Orgs: f.orgs,
		Batch: node.BatchConfig{MaxTxs: f.maxTxs, MaxBytes: 16 << 20, Timeout: f.timeout}})
	if err != nil {
		return nil, err
	}
	if n.ch, err = node.LoadChannel(n.layout.Channel); err != nil {
		return nil, err
	}
	for _, nd := range n.layout.Nodes {
		cfg, err := node.LoadNode(nd.Config)
		if err != nil {
			return nil, err
		}
		cfg.Log.Level = "error" // the demo prints its own progress
		if nd.Role == identity.RoleOrderer {
			if n.orderer, err = node.StartOrderer(cfg); err != nil {
				return nil, err
			}
			continue
		}
		p, err := node.StartPeer(cfg)
		if err != nil {
			return nil, err
		}
		n.peers = append(n.peers, p)
	}
	for i, c := range n.layout.Clients {
		contract, gw, err := connectClient(n.ch, c, n.peers[i].Addr)
		if err != nil {
			return nil, err
		}
		n.conns = append(n.conns, gw)
		n.orgs = append(n.orgs, contract)
	}
	return n, nil
}

// connectClient connects an org's client identity to a peer over mutual TLS.
func connectClient(ch *node.ChannelConfig, c localnet.Client, addr string) (*client.Contract, *client.Gateway, error) {
	certPEM, err := os.ReadFile(c.Cert)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(c.Key)
	if err != nil {
		return nil, nil, err
	}
	signer, err := identity.LoadSigner(c.Org, certPEM, keyPEM)
	if err != nil {
		return nil, nil, err
	}
	tlsCfg, err := node.ClientTLS(ch, c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, nil, err
	}
	gw, err := client.Connect(addr, signer, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		return nil, nil, err
	}
	return gw.Contract(ch.Channel, smallbank.Name), gw, nil
}

func (n *demoNet) close(keep bool) {
	for _, g := range n.conns {
		g.Close()
	}
	for _, p := range n.peers {
		p.Close()
	}
	if n.orderer != nil {
		n.orderer.Close()
	}
	if !keep {
		os.RemoveAll(n.dir)
	}
}

const demoBalance = 1_000_000

func runDemo(ctx context.Context, out io.Writer, f demoFlags) error {
	if err := f.validate(); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	n, err := startDemoNet(f)
	if err != nil {
		return err
	}
	defer n.close(f.keep)
	fmt.Fprintf(out, "network up in %v: 1 orderer, %d peers (one per org), mutual TLS on 127.0.0.1\n",
		time.Since(start).Round(time.Millisecond), len(n.peers))
	if err := createAccounts(ctx, n, f.accounts); err != nil {
		return err
	}
	fmt.Fprintf(out, "created %d accounts\n", f.accounts)
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
	}
	// The crypto bound is measured on the idle network, before the load.
	rates, err := bench.MeasureCryptoRates(identity.ECDSAP256, 0, time.Second, 1500)
	if err != nil {
		return err
	}
	before := n.orderer.Orderer.Metrics()
	res := runLoad(ctx, n, f)
	pprof.StopCPUProfile()
	after := n.orderer.Orderer.Metrics()
	res.avgBlock = float64(after.Txs-before.Txs) / float64(max(after.Blocks-before.Blocks, 1))
	printDemo(out, f, res)
	printBound(out, f, res, rates)
	if err := checkDemo(ctx, out, n, f, res); err != nil {
		return err
	}
	if f.keep {
		fmt.Fprintf(out, "network directory kept: %s\n", n.dir)
	}
	return nil
}

func createAccounts(ctx context.Context, n *demoNet, accounts int) error {
	for first := 0; first < accounts; first += smallbank.MaxCreatedAccounts {
		count := min(smallbank.MaxCreatedAccounts, accounts-first)
		_, err := n.orgs[0].Submit(ctx, "create_accounts", strconv.Itoa(first), strconv.Itoa(count),
			strconv.Itoa(demoBalance), strconv.Itoa(demoBalance))
		if err != nil {
			return fmt.Errorf("creating accounts %d-%d: %w", first, first+count-1, err)
		}
	}
	return nil
}

// demoResult is what the load measured.
type demoResult struct {
	elapsed   time.Duration
	submitted int64
	byCode    map[api.TxValidationCode]int64
	failed    int64 // endorsement or submission errors (not committed)
	latencies []time.Duration
	delta     int64 // money added by VALID deposit/transact_savings/write_check
	lastErr   error
	avgBlock  float64 // transactions per block during the load
}

func runLoad(ctx context.Context, n *demoNet, f demoFlags) *demoResult {
	res := &demoResult{byCode: map[api.TxValidationCode]int64{}}
	var mu sync.Mutex
	var committed atomic.Int64
	ctx, cancel := context.WithTimeout(ctx, f.duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < f.clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(f.seed + int64(w)))
			c := n.orgs[w%len(n.orgs)]
			for ctx.Err() == nil {
				fn, args, delta := smallbankOp(rng, f.accounts)
				t0 := time.Now()
				commit, err := c.Submit(context.Background(), fn, args...)
				lat := time.Since(t0)
				var ce *client.CommitError
				mu.Lock()
				res.submitted++
				switch {
				case err == nil:
					res.byCode[commit.Code]++
					res.latencies = append(res.latencies, lat)
					res.delta += delta
					committed.Add(1)
				case errors.As(err, &ce):
					res.byCode[ce.Code]++
					res.latencies = append(res.latencies, lat)
					committed.Add(1)
				default:
					res.failed++
					res.lastErr = err
				}
				mu.Unlock()
			}
		}(w)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// A live line on a terminal; otherwise one line every 2 s.
	tty := term.IsTerminal(int(os.Stderr.Fd()))
	every, format := 2*time.Second, "load: %4.1fs / %v   committed %6d   %6.0f tx/s\n"
	if tty {
		every, format = 250*time.Millisecond, "\rload: %4.1fs / %v   committed %6d   %6.0f tx/s "
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-done:
			res.elapsed = time.Since(start)
			if tty {
				fmt.Fprintf(os.Stderr, "\r%-80s\r", "")
			}
			return res
		case <-tick.C:
			el := time.Since(start)
			fmt.Fprintf(os.Stderr, format, el.Seconds(), f.duration, committed.Load(), float64(committed.Load())/el.Seconds())
		}
	}
}

// smallbankOp draws one transaction of Caliper's "modify" mix: the five
// writes with equal probability, amounts 1-200, two distinct accounts for
// two-account operations. delta is the money it adds if VALID.
func smallbankOp(rng *rand.Rand, accounts int) (fn string, args []string, delta int64) {
	a := rng.Intn(accounts)
	b := rng.Intn(accounts - 1)
	if b >= a {
		b++
	}
	amount := int64(1 + rng.Intn(200))
	ids, amt := strconv.Itoa(a), strconv.FormatInt(amount, 10)
	switch rng.Intn(5) {
	case 0:
		return "deposit_checking", []string{ids, amt}, amount
	case 1:
		return "write_check", []string{ids, amt}, -amount
	case 2:
		return "transact_savings", []string{ids, amt}, amount
	case 3:
		return "send_payment", []string{ids, strconv.Itoa(b), amt}, 0
	}
	return "amalgamate", []string{ids, strconv.Itoa(b)}, 0
}

func printDemo(out io.Writer, f demoFlags, r *demoResult) {
	var committed int64
	for _, n := range r.byCode {
		committed += n
	}
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
	pct := func(q float64) string {
		if len(r.latencies) == 0 {
			return "-"
		}
		d := r.latencies[int(q*float64(len(r.latencies)-1))]
		return fmt.Sprintf("%.1f", float64(d)/1e6)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nclients\tduration\tsubmitted\tcommitted\tthroughput tx/s\tgoodput tx/s\tp50 ms\tp95 ms\tp99 ms\tmax ms\n")
	fmt.Fprintf(tw, "%d\t%v\t%d\t%d\t%.0f\t%.0f\t%s\t%s\t%s\t%s\n", f.clients, r.elapsed.Round(time.Millisecond), r.submitted, committed,
		float64(committed)/r.elapsed.Seconds(), float64(r.byCode[api.TxValidationCode_VALID])/r.elapsed.Seconds(),
		pct(0.5), pct(0.95), pct(0.99), pct(1))
	tw.Flush()
	fmt.Fprintln(out, "\nvalidation code            transactions")
	codes := make([]api.TxValidationCode, 0, len(r.byCode))
	for c := range r.byCode {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
	for _, c := range codes {
		fmt.Fprintf(out, "%-26s %12d\n", c, r.byCode[c])
	}
	if r.failed > 0 {
		fmt.Fprintf(out, "%-26s %12d   (last: %v)\n", "not committed (error)", r.failed, r.lastErr)
	}
	fmt.Fprintln(out, "latency = end to end per transaction: propose, endorse on every org, order, validate, durable commit")
}

// checkDemo checks the Smallbank invariant through queries and that every
// peer's state is identical.
func checkDemo(ctx context.Context, out io.Writer, n *demoNet, f demoFlags, r *demoResult) error {
	deadline := time.Now().Add(30 * time.Second)
	for !sameHeight(n) {
		if time.Now().After(deadline) {
			return fmt.Errorf("demo: peers did not reach the orderer's height %d within 30 s", n.orderer.Orderer.Height())
		}
		time.Sleep(5 * time.Millisecond)
	}
	var total int64
	for id := 0; id < f.accounts; id++ {
		raw, err := n.orgs[id%len(n.orgs)].Evaluate(ctx, "query", strconv.Itoa(id))
		if err != nil {
			return fmt.Errorf("demo: query account %d: %w", id, err)
		}
		var b smallbank.Balance
		if err := json.Unmarshal(raw, &b); err != nil {
			return err
		}
		total += b.Checking + b.Savings
	}
	want := int64(f.accounts)*2*demoBalance + r.delta
	if total != want {
		return fmt.Errorf("demo: Smallbank invariant BROKEN: total money %d, want %d", total, want)
	}
	hashes := map[string]bool{}
	for _, p := range n.peers {
		h, err := stateHash(p.State)
		if err != nil {
			return err
		}
		hashes[h] = true
	}
	if len(hashes) != 1 {
		return fmt.Errorf("demo: the %d peers hold different states", len(n.peers))
	}
	fmt.Fprintf(out, "\nSmallbank invariant holds: total %d = initial %d + committed deposits and checks %+d\n",
		total, int64(f.accounts)*2*demoBalance, r.delta)
	fmt.Fprintf(out, "all %d peers at height %d with identical state\n", len(n.peers), n.peers[0].Committer.Height())
	return nil
}

func sameHeight(n *demoNet) bool {
	h := n.orderer.Orderer.Height()
	for _, p := range n.peers {
		if p.Committer.Height() != h {
			return false
		}
	}
	return true
}

func stateHash(db statedb.DB) (string, error) {
	h := sha256.New()
	err := db.Scan(smallbank.Name, "", "", func(k string, v statedb.Value) bool {
		fmt.Fprintf(h, "%d:%s=%d:%s@%s;", len(k), k, len(v.Data), v.Data, v.Version)
		return true
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

// printBound compares the load's throughput with the network's crypto
// bound at the signing and verifying rates measured before the load.
func printBound(out io.Writer, f demoFlags, r *demoResult, rates bench.CryptoRates) {
	b := bench.NetworkBound(rates, f.orgs, max(r.avgBlock, 1))
	var committed int64
	for _, n := range r.byCode {
		committed += n
	}
	tps := float64(committed) / r.elapsed.Seconds()
	fmt.Fprintf(out, "\nend-to-end crypto bound: %.0f tx/s (%.2f signatures created and %.2f verified per transaction,\n"+
		"  %.0f signs/s and %.0f verifies/s on %d cores, %.1f transactions per block): throughput is %.0f%% of it\n",
		b.TxPerSec, b.SignsPerTx, b.VerifiesPerTx, rates.SignPerSec, rates.VerifyPerSec, rates.Workers, r.avgBlock, 100*tps/b.TxPerSec)
}
