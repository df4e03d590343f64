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
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

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
	net                             string
	batchMode                       string
	base                            int64 // first account id
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
	fl.StringVar(&f.batchMode, "batch-mode", "block", "block: cut full blocks or at --batch-timeout; stream: cut whenever the orderer can take a block (StreamChain)")
	fl.Int64Var(&f.seed, "seed", 1, "random seed of the workload")
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
	case f.batchMode != "block" && f.batchMode != "stream":
		return fmt.Errorf("--batch-mode %q: want block or stream", f.batchMode)
	}
	return nil
}

// demoNet is the network under load: embedded in this process, or one
// that `strand net up` runs (then peers and orderer are nil).
type demoNet struct {
	dir     string
	layout  *localnet.Layout
	orderer *node.Orderer
	peers   []*node.Peer
	orgs    []*client.Contract // one client per org, through its own peer
	conns   []*localnet.Conn
}

func startDemoNet(f demoFlags) (_ *demoNet, err error) {
	n := &demoNet{}
	defer func() {
		if err != nil {
			n.close(f.keep)
		}
	}()
	if f.net != "" {
		if n.layout, err = localnet.Load(f.net); err != nil {
			return nil, err
		}
	} else if err := n.startEmbedded(f); err != nil {
		return nil, err
	}
	for _, org := range n.layout.Orgs() {
		conn, err := n.layout.Connect(org, "")
		if err != nil {
			return nil, err
		}
		n.conns = append(n.conns, conn)
		n.orgs = append(n.orgs, conn.Contract(smallbank.Name))
	}
	return n, nil
}

func (n *demoNet) startEmbedded(f demoFlags) error {
	dir, err := os.MkdirTemp("", "strand-demo-")
	if err != nil {
		return err
	}
	n.dir = dir
	n.layout, err = localnet.Generate(dir, localnet.Spec{Orgs: f.orgs,
		Batch: node.BatchConfig{Mode: f.batchMode, MaxTxs: f.maxTxs, MaxBytes: 16 << 20, Timeout: f.timeout}})
	if err != nil {
		return err
	}
	for _, nd := range n.layout.Nodes {
		cfg, err := node.LoadNode(nd.Config)
		if err != nil {
			return err
		}
		cfg.Log.Level = "error" // the demo prints its own progress
		if nd.Role == identity.RoleOrderer {
			if n.orderer, err = node.StartOrderer(cfg); err != nil {
				return err
			}
			continue
		}
		p, err := node.StartPeer(cfg)
		if err != nil {
			return err
		}
		n.peers = append(n.peers, p)
	}
	return nil
}

func (n *demoNet) close(keep bool) {
	for _, c := range n.conns {
		c.Close()
	}
	for _, p := range n.peers {
		p.Close()
	}
	if n.orderer != nil {
		n.orderer.Close()
	}
	if !keep && n.dir != "" {
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
	if f.net == "" {
		fmt.Fprintf(out, "network up in %v: 1 orderer, %d peers (one per org), mutual TLS on 127.0.0.1\n",
			time.Since(start).Round(time.Millisecond), len(n.peers))
	} else {
		fmt.Fprintf(out, "network in %s: %d orgs, mutual TLS\n", f.net, len(n.orgs))
		f.orgs = len(n.orgs)
	}
	// Account ids start at a base unique to this run, so that runs against
	// a long-lived network do not collide.
	f.base = time.Now().Unix() * 1_000_000
	if err := createAccounts(ctx, n, f); err != nil {
		return err
	}
	fmt.Fprintf(out, "created %d accounts\n", f.accounts)
	// The crypto bound is measured on the idle network, before the load.
	rates, err := bench.MeasureCryptoRates(identity.ECDSAP256, 0, time.Second, 1500)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	res := runLoad(ctx, n, f)
	stopProfile()
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

func createAccounts(ctx context.Context, n *demoNet, f demoFlags) error {
	for i := 0; i < f.accounts; i += smallbank.MaxCreatedAccounts {
		count := min(smallbank.MaxCreatedAccounts, f.accounts-i)
		first := f.base + int64(i)
		_, err := n.orgs[0].Submit(ctx, "create_accounts", strconv.FormatInt(first, 10), strconv.Itoa(count),
			strconv.Itoa(demoBalance), strconv.Itoa(demoBalance))
		if err != nil {
			return fmt.Errorf("creating accounts %d-%d: %w", first, first+int64(count)-1, err)
		}
	}
	// The commit was reported by the first org's peer; wait until every
	// org's peer has the accounts before their clients use them.
	last := strconv.FormatInt(f.base+int64(f.accounts)-1, 10)
	deadline := time.Now().Add(30 * time.Second)
	for o, c := range n.orgs {
		for {
			_, err := c.Evaluate(ctx, "query", last)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("demo: %s's peer does not have the new accounts after 30 s: %w", n.layout.Orgs()[o], err)
			}
			time.Sleep(5 * time.Millisecond)
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
	blocks    map[uint64]struct{} // blocks the committed transactions were in
}

// avgBlock is the load's transactions per block.
func (r *demoResult) avgBlock() float64 {
	var committed int64
	for _, n := range r.byCode {
		committed += n
	}
	return float64(committed) / float64(max(len(r.blocks), 1))
}

func runLoad(ctx context.Context, n *demoNet, f demoFlags) *demoResult {
	res := &demoResult{byCode: map[api.TxValidationCode]int64{}, blocks: map[uint64]struct{}{}}
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
				fn, args, delta := smallbankOp(rng, f.base, f.accounts)
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
					res.blocks[commit.Block] = struct{}{}
					committed.Add(1)
				case errors.As(err, &ce):
					res.byCode[ce.Code]++
					res.latencies = append(res.latencies, lat)
					res.blocks[ce.Block] = struct{}{}
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
func smallbankOp(rng *rand.Rand, base int64, accounts int) (fn string, args []string, delta int64) {
	a := rng.Intn(accounts)
	b := rng.Intn(accounts - 1)
	if b >= a {
		b++
	}
	amount := int64(1 + rng.Intn(200))
	ids, idb, amt := strconv.FormatInt(base+int64(a), 10), strconv.FormatInt(base+int64(b), 10), strconv.FormatInt(amount, 10)
	switch rng.Intn(5) {
	case 0:
		return "deposit_checking", []string{ids, amt}, amount
	case 1:
		return "write_check", []string{ids, amt}, -amount
	case 2:
		return "transact_savings", []string{ids, amt}, amount
	case 3:
		return "send_payment", []string{ids, idb, amt}, 0
	}
	return "amalgamate", []string{ids, idb}, 0
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

// checkDemo checks the Smallbank invariant through queries, and that every
// peer holds the same state: directly for an embedded network, through
// every org's peer otherwise.
func checkDemo(ctx context.Context, out io.Writer, n *demoNet, f demoFlags, r *demoResult) error {
	if n.orderer != nil {
		deadline := time.Now().Add(30 * time.Second)
		for !sameHeight(n) {
			if time.Now().After(deadline) {
				return fmt.Errorf("demo: peers did not reach the orderer's height %d within 30 s", n.orderer.Orderer.Height())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	var total int64
	var agreed bool
	for attempt := 0; attempt < 50 && !agreed; attempt++ {
		if attempt > 0 {
			time.Sleep(200 * time.Millisecond) // another org's peer may still be committing the last blocks
		}
		var err error
		if total, agreed, err = queryTotals(ctx, n, f); err != nil {
			return err
		}
	}
	if !agreed {
		return fmt.Errorf("demo: the orgs' peers answer different balances")
	}
	want := int64(f.accounts)*2*demoBalance + r.delta
	if total != want {
		return fmt.Errorf("demo: Smallbank invariant BROKEN: total money %d, want %d", total, want)
	}
	fmt.Fprintf(out, "\nSmallbank invariant holds: total %d = initial %d + committed deposits and checks %+d\n",
		total, int64(f.accounts)*2*demoBalance, r.delta)
	if n.orderer == nil {
		fmt.Fprintf(out, "every org's peer answers the same balance for all %d accounts\n", f.accounts)
		return nil
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
	fmt.Fprintf(out, "all %d peers at height %d with identical state\n", len(n.peers), n.peers[0].Committer.Height())
	return nil
}

// queryTotals queries every account through every org's peer; it returns
// the total money and whether all peers gave the same balances.
func queryTotals(ctx context.Context, n *demoNet, f demoFlags) (int64, bool, error) {
	var total int64
	for i := 0; i < f.accounts; i++ {
		id := strconv.FormatInt(f.base+int64(i), 10)
		var first []byte
		for o, c := range n.orgs {
			raw, err := c.Evaluate(ctx, "query", id)
			if err != nil {
				return 0, false, fmt.Errorf("demo: query account %s through %s: %w", id, n.layout.Orgs()[o], err)
			}
			if o == 0 {
				first = raw
				var b smallbank.Balance
				if err := json.Unmarshal(raw, &b); err != nil {
					return 0, false, err
				}
				total += b.Checking + b.Savings
			} else if string(raw) != string(first) {
				return 0, false, nil
			}
		}
	}
	return total, true, nil
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
	b := bench.NetworkBound(rates, f.orgs, max(r.avgBlock(), 1))
	var committed int64
	for _, n := range r.byCode {
		committed += n
	}
	tps := float64(committed) / r.elapsed.Seconds()
	fmt.Fprintf(out, "\nend-to-end crypto bound: %.0f tx/s (%.2f signatures created and %.2f verified per transaction,\n"+
		"  %.0f signs/s and %.0f verifies/s on %d cores, %.1f transactions per block): throughput is %.0f%% of it\n",
		b.TxPerSec, b.SignsPerTx, b.VerifiesPerTx, rates.SignPerSec, rates.VerifyPerSec, rates.Workers, r.avgBlock(), 100*tps/b.TxPerSec)
}
