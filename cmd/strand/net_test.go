package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// cli runs the strand command line in this process and returns what it
// printed.
func cli(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := rootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := cli(t, args...)
	if err != nil {
		t.Fatalf("strand %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// txIDs matches a tx id.
var txIDs = regexp.MustCompile(`[0-9a-f]{64}`)

const (
	netAccounts = 200
	netBalance  = 1000 // initial checking and savings of every account
)

// TestNetLifecycle runs a network of real processes (this test binary
// standing in for strand): net up, accounts and a concurrent Smallbank load
// from both orgs, SIGKILL of peer0.Org2, a clear error for Smallbank while
// it is down and kv blocks committed without it, net up restarting only
// that peer, catch-up to the same height and state, the Smallbank
// invariant, and net down leaving no process behind.
func TestNetLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network of processes")
	}
	// smallbank needs both orgs; kv either, so that blocks are committed
	// while peer0.Org2 is down and it has something to catch up on.
	dir, lay := generateTwoPolicyNet(t)
	up := mustCLI(t, "net", "up", "--dir", dir)
	t.Logf("net up:\n%s", up)
	pids := readPIDs(t, lay)
	// Every node's first log line names its build.
	for _, n := range lay.Nodes {
		raw, err := os.ReadFile(lay.LogFile(n.Name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitN(string(raw), "\n", 3)
		if len(lines) < 2 || !strings.Contains(lines[1], "msg=starting node="+n.Name) || !strings.Contains(lines[1], " commit=") || !strings.Contains(lines[1], " go=go") {
			t.Errorf("%s: log starts %q, want its start line naming the build", n.Name, lines)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out := mustCLI(t, "invoke", "--dir", dir, "--org", "Org1", "create_account", "0", "A0", strconv.Itoa(netBalance), strconv.Itoa(netBalance))
	if !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke output lacks the code:\n%s", out)
	}
	// Refusals: the cause first and the tx id once; a query that would
	// write fails.
	_, err := cli(t, "invoke", "--dir", dir, "create_account", "0", "A0", "1", "1")
	if want := `endorser: smallbank.create_account: account "0" already exists; refused by peer peer0.Org1 of org Org1; tx `; err == nil ||
		!strings.HasPrefix(err.Error(), want) || len(txIDs.FindAllString(err.Error(), -1)) != 1 {
		t.Errorf("invoke create_account of an existing account: %v, want it to start %q and name the tx once", err, want)
	}
	if out, err := cli(t, "query", "--dir", dir, "create_account", "q", "Q", "1", "1"); err == nil ||
		!strings.Contains(err.Error(), "smallbank.create_account writes 3 key(s) (\"account_q\" first)") || !strings.Contains(err.Error(), "submit it as a transaction instead") {
		t.Errorf("query create_account: %v (output %q), want an error saying it writes and to submit it", err, out)
	}
	c1, c2 := netConnect(t, lay, "Org1", ""), netConnect(t, lay, "Org2", "")
	netCreateAccounts(t, ctx, c1.Contract(smallbank.Name))

	var delta atomic.Int64
	netLoad(t, ctx, 3*time.Second, &delta, c1.Contract(smallbank.Name), c2.Contract(smallbank.Name))

	// `strand demo --net` drives the same network with its own accounts
	// (ids from a per-run base, so this test's accounts are untouched) and
	// checks its invariant and the orgs' agreement.
	demo := mustCLI(t, "demo", "--net", dir, "--duration", "1s", "--accounts", "20", "--clients", "2")
	for _, want := range []string{"Smallbank invariant holds", "every org's peer answers the same balance", "end-to-end crypto bound"} {
		if !strings.Contains(demo, want) {
			t.Errorf("demo --net output lacks %q:\n%s", want, demo)
		}
	}
	// `strand bench run --net` measures each node process and itself.
	b := mustCLI(t, "bench", "run", "--net", filepath.Join(dir, "layout.json"), "--workload", "ycsb", "--param", "records=50,value_size=50",
		"--clients", "2", "--duration", "500ms", "--html", "")
	for _, want := range []string{"every org's peer at the same height", "load generator: CPU", "peer0.Org1: CPU", "orderer0: CPU", " verify ", " persist "} {
		if !strings.Contains(b, want) {
			t.Errorf("bench run --net output lacks %q:\n%s", want, b)
		}
	}

	// SIGKILL peer0.Org2: Smallbank (AND policy) is refused with an error
	// naming the org; kv (OR policy) goes on committing through Org1.
	victim := pids["peer0.Org2"]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	netWaitGone(t, victim)
	heightAtKill := netHeight(t, ctx, c1)
	out, err = cli(t, "invoke", "--dir", dir, "--org", "Org1", "deposit_checking", "0", "5")
	if err == nil || !strings.Contains(err.Error(), "Org2") {
		t.Fatalf("invoke with peer0.Org2 down: error %v, want one naming Org2\n%s", err, out)
	}
	t.Logf("invoke while peer0.Org2 is down: %v", err)
	if _, err := cli(t, "invoke", "--dir", dir, "--org", "Org2", "deposit_checking", "0", "5"); err == nil ||
		!strings.Contains(err.Error(), "smallbank.deposit_checking: peer peer0.Org2 at ") || !strings.Contains(err.Error(), "`strand net up --dir "+dir+"` starts stopped ones") {
		t.Errorf("invoke through the stopped peer0.Org2: %v, want it named and how to start it", err)
	}
	kv := c1.Contract("kv")
	for i := range 20 {
		if _, err := kv.Submit(ctx, "insert", fmt.Sprintf("k%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}

	// net up again restarts only the dead peer.
	up = mustCLI(t, "net", "up", "--dir", dir)
	t.Logf("net up again:\n%s", up)
	after := readPIDs(t, lay)
	for name, pid := range pids {
		if restarted := after[name] != pid; restarted != (name == "peer0.Org2") {
			t.Errorf("%s: pid %d before, %d after the second net up", name, pid, after[name])
		}
	}
	c2 = netConnect(t, lay, "Org2", "")
	h1 := netHeight(t, ctx, c1)
	if h1 <= heightAtKill {
		t.Fatalf("height %d after the kv writes, %d before: nothing committed while peer0.Org2 was down", h1, heightAtKill)
	}
	deadline := time.Now().Add(20 * time.Second)
	for h2 := netHeight(t, ctx, c2); h2 != h1; h2 = netHeight(t, ctx, c2) {
		if time.Now().After(deadline) {
			t.Fatalf("peer0.Org2 at height %d, peer0.Org1 at %d after 20s", h2, h1)
		}
		time.Sleep(100 * time.Millisecond)
	}
	status := mustCLI(t, "net", "status", "--dir", dir)
	t.Logf("net status:\n%s", status)
	if !strings.Contains(status, strconv.FormatUint(h1, 10)) {
		t.Errorf("net status does not show height %d", h1)
	}
	// Orderers show their block store's height (and Raft role) and every
	// node its metrics address.
	if !regexp.MustCompile(`(?m)^orderer0\s+orderer\s+\S+\s+\d+\s+running\s+yes\s+\d+( \(Raft [a-z ]+\))?\s+127\.0\.0\.1:\d+$`).MatchString(status) {
		t.Errorf("net status shows no height or metrics address for orderer0")
	}

	total := compareAccounts(t, ctx, c1.Contract(smallbank.Name), c2.Contract(smallbank.Name))
	if want := int64(netAccounts*2*netBalance) + delta.Load(); total != want {
		t.Fatalf("Smallbank invariant broken: total %d, want %d (initial %d + committed deposits, savings and checks %d)",
			total, want, netAccounts*2*netBalance, delta.Load())
	}
	if v, err := c2.Contract("kv").Evaluate(ctx, "read", "k19"); err != nil || string(v) != "v" {
		t.Errorf("peer0.Org2 reads kv k19 = %q, %v: want the value written while it was down", v, err)
	}

	netRevoke(t, ctx, dir, lay, c1)
	name, pid := netAddOrg(t, dir)
	after[name] = pid
	netRemoveOrg(t, dir)

	out = mustCLI(t, "net", "down", "--dir", dir)
	t.Logf("net down:\n%s", out)
	for name, pid := range after {
		netWaitGone(t, pid)
		if _, err := os.Stat(lay.PIDFile(name)); !os.IsNotExist(err) {
			t.Errorf("PID file of %s left: %v", name, err)
		}
	}
	if out := mustCLI(t, "net", "status", "--dir", dir); strings.Contains(out, "running") {
		t.Errorf("net status after net down:\n%s", out)
	}
}

func netConnect(t *testing.T, lay *localnet.Layout, org, peer string) *localnet.Conn {
	t.Helper()
	c, err := lay.Connect(org, peer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func readPIDs(t *testing.T, lay *localnet.Layout) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, n := range lay.Nodes {
		raw, err := os.ReadFile(lay.PIDFile(n.Name))
		if err != nil {
			t.Fatal(err)
		}
		if out[n.Name], err = strconv.Atoi(strings.TrimSpace(string(raw))); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// netWaitGone waits until pid no longer exists (the children of this process
// are reaped by the goroutine that started them).
func netWaitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still exists", pid)
		}
	}
}

func netHeight(t *testing.T, ctx context.Context, c *localnet.Conn) uint64 {
	t.Helper()
	h, err := c.Height(ctx, 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// netCreateAccounts opens accounts 1..netAccounts-1 (0 is opened through the
// CLI), 16 at a time.
func netCreateAccounts(t *testing.T, ctx context.Context, c *client.Contract) {
	t.Helper()
	var wg sync.WaitGroup
	errc := make(chan error, netAccounts)
	sem := make(chan struct{}, 16)
	for i := 1; i < netAccounts; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			b := strconv.Itoa(netBalance)
			if _, err := c.SubmitWithRetry(ctx, 3, "create_account", strconv.Itoa(i), "A"+strconv.Itoa(i), b, b); err != nil {
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// netLoad runs Smallbank transactions from 8 workers per contract for d
// and adds to delta the money that VALID transactions brought in or took
// out. A transaction whose outcome is unknown fails the test.
func netLoad(t *testing.T, ctx context.Context, d time.Duration, delta *atomic.Int64, cs ...*client.Contract) {
	t.Helper()
	var valid, invalid, refused atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range 8 * len(cs) {
		c := cs[w%len(cs)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for time.Now().Before(end) {
				fn, args, dm := netOp(rng)
				_, err := c.SubmitWithRetry(ctx, 3, fn, args...)
				var ce *client.CommitError
				var ee *client.EndorseError
				switch {
				case err == nil:
					valid.Add(1)
					delta.Add(dm)
				case errors.As(err, &ce):
					invalid.Add(1)
				case errors.As(err, &ee):
					refused.Add(1) // never ordered
				default:
					t.Errorf("%s%q: outcome unknown: %v", fn, args, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("load: %d VALID, %d invalid after retries, %d refused at endorsement", valid.Load(), invalid.Load(), refused.Load())
	if valid.Load() == 0 {
		t.Fatal("no transaction of the load committed")
	}
}

// netOp draws a Smallbank transaction and the money it adds to the bank.
func netOp(rng *rand.Rand) (fn string, args []string, delta int64) {
	a, b := rng.IntN(netAccounts), rng.IntN(netAccounts-1)
	if b >= a {
		b++
	}
	amt := int64(1 + rng.IntN(100))
	ids, n := strconv.Itoa(a), strconv.FormatInt(amt, 10)
	switch rng.IntN(5) {
	case 0:
		return "send_payment", []string{ids, strconv.Itoa(b), n}, 0
	case 1:
		return "deposit_checking", []string{ids, n}, amt
	case 2:
		return "write_check", []string{ids, n}, -amt
	case 3:
		return "transact_savings", []string{ids, n}, amt
	}
	return "amalgamate", []string{ids, strconv.Itoa(b)}, 0
}

// compareAccounts queries every account on both peers, fails if they
// differ, and returns the bank's total.
func compareAccounts(t *testing.T, ctx context.Context, p1, p2 *client.Contract) int64 {
	t.Helper()
	var total int64
	for i := range netAccounts {
		var bal [2]smallbank.Balance
		for j, c := range []*client.Contract{p1, p2} {
			raw, err := c.Evaluate(ctx, "query", strconv.Itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &bal[j]); err != nil {
				t.Fatal(err)
			}
		}
		if bal[0] != bal[1] {
			t.Fatalf("account %d: %+v on peer0.Org1, %+v on peer0.Org2", i, bal[0], bal[1])
		}
		total += bal[0].Checking + bal[0].Savings
	}
	return total
}

func TestNetBadInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	out := mustCLI(t, "crypto", "gen", "--dir", dir, "--orgs", "3")
	for _, want := range []string{"peer0.Org3", "orderer0", "nodes/peer0.Org1.yaml", "client0.Org2"} {
		if !strings.Contains(out, want) {
			t.Errorf("crypto gen output lacks %q:\n%s", want, out)
		}
	}
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"invoke", "--dir", empty, "create_account", "a", "A", "1", "1"}, "no network in " + empty + ": run `strand net up --dir " + empty + "` first"},
		{[]string{"query", "--dir", empty, "query", "a"}, "no network in"},
		{[]string{"events", "--dir", empty}, "no network in"},
		{[]string{"net", "down", "--dir", empty}, "no network in"},
		{[]string{"net", "status", "--dir", empty}, "no network in"},
		{[]string{"net", "verify", "--dir", empty}, "no network in"},
		{[]string{"invoke", "--dir", dir, "--org", "Org9", "query", "a"}, "want one of Org1, Org2, Org3"},
		// Contracts are defined on the channel, so only a peer can say
		// that one is not (docs/contracts.md); the error names it.
		{[]string{"query", "--dir", dir, "--contract", "nope", "query", "a"}, `nope.query`},
		{[]string{"net", "up", "--dir", t.TempDir(), "--orgs", "0"}, "--orgs 0"},
		{[]string{"crypto", "gen", "--dir", dir}, "not empty"},
		{[]string{"peer", "start", "--config", filepath.Join(dir, "nodes", "orderer0.yaml")}, "orderer0.yaml: role is \"orderer\""},
		{[]string{"orderer", "start", "--config", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
	} {
		_, err := cli(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("strand %s: error %v, want one containing %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// generateTwoPolicyNet generates a 2-org network whose smallbank needs
// both orgs and whose kv either, and brings it down when the test ends.
func generateTwoPolicyNet(t *testing.T) (string, *localnet.Layout) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "net")
	lay, err := localnet.Generate(dir, localnet.Spec{Orgs: 2,
		Batch: node.BatchConfig{MaxTxs: 100, Timeout: 10 * time.Millisecond},
		Contracts: []localnet.ContractSpec{
			{Name: "smallbank", Policy: "AND('Org1.peer','Org2.peer')"},
			{Name: "kv", Policy: "OR('Org1.peer','Org2.peer')"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli(t, "net", "down", "--dir", dir) })
	return dir, lay
}
