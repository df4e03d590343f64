package main

import (
	"bufio"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestNetRaftLeaderKill runs three orderer processes as a Raft cluster
// under Smallbank load from both orgs, SIGKILLs the leader, and checks
// that a new leader is elected and the load goes on; that every
// transaction a client heard committed is in both peers' ledgers at the
// block it heard; that the peers agree on every account; and that the
// Smallbank invariant holds over every transaction that committed. Then
// the old leader is restarted and every node's chain must agree.
func TestNetRaftLeaderKill(t *testing.T) {
	n := startRaftNet(t, localnet.Spec{Orderers: 3})
	l, loadDone := n.load(5 * time.Second)

	// After a second, SIGKILL the leader.
	time.Sleep(time.Second)
	leader, id := raftLeader(t, n.lay, "")
	n.kill(t, leader)
	killed := time.Now()
	next, _ := raftLeader(t, n.lay, leader)
	t.Logf("killed leader %s (raft id %s); %s leads %v later", leader, id, next, time.Since(killed).Round(time.Millisecond))
	if d := time.Since(killed); d > 5*time.Second {
		t.Errorf("a new leader took %v, want a few seconds at most", d)
	}
	<-loadDone
	// The old leader rejoins as a follower and catches up.
	n.restart(t)
	n.settle(t, l)
}

// raftNet is a network of processes (this test binary standing in for
// strand) with two orgs and a Raft ordering service, its Smallbank
// accounts opened.
type raftNet struct {
	dir    string
	lay    *localnet.Layout
	pids   map[string]int
	c1, c2 *localnet.Conn
	ctx    context.Context // bounds the whole test
}

// startRaftNet generates a network from spec (2 orgs; unless spec sets
// Batch, 10 ms blocks of at most 100 transactions), brings it up with net
// up, and opens the accounts. before, if set, runs between generation and
// net up.
func startRaftNet(t *testing.T, spec localnet.Spec, before ...func(*localnet.Layout)) *raftNet {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a network of processes")
	}
	spec.Orgs = 2
	if spec.Batch == (node.BatchConfig{}) {
		spec.Batch = node.BatchConfig{MaxTxs: 100, Timeout: 10 * time.Millisecond}
	}
	n := &raftNet{dir: filepath.Join(t.TempDir(), "net")}
	var err error
	if n.lay, err = localnet.Generate(n.dir, spec); err != nil {
		t.Fatal(err)
	}
	for _, f := range before {
		f(n.lay)
	}
	t.Cleanup(func() { cli(t, "net", "down", "--dir", n.dir) })
	mustCLI(t, "net", "up", "--dir", n.dir)
	n.pids = readPIDs(t, n.lay)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	n.ctx = ctx
	n.c1, n.c2 = netConnect(t, n.lay, "Org1", ""), netConnect(t, n.lay, "Org2", "")
	b := strconv.Itoa(netBalance)
	if _, err := n.c1.Contract(smallbank.Name).Submit(ctx, "create_account", "0", "A0", b, b); err != nil {
		t.Fatal(err)
	}
	netCreateAccounts(t, ctx, n.c1.Contract(smallbank.Name))
	return n
}

// load runs a Smallbank ledgerLoad from both orgs for d in the background;
// the channel is closed when it is over.
func (n *raftNet) load(d time.Duration) (*ledgerLoad, <-chan struct{}) {
	l := &ledgerLoad{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.run(n.ctx, d, n.c1.Contract(smallbank.Name), n.c2.Contract(smallbank.Name))
	}()
	return l, done
}

// kill SIGKILLs the named nodes at once and waits until they are gone.
func (n *raftNet) kill(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if err := syscall.Kill(n.pids[name], syscall.SIGKILL); err != nil {
			t.Fatalf("SIGKILL %s (pid %d): %v", name, n.pids[name], err)
		}
	}
	for _, name := range names {
		netWaitGone(t, n.pids[name])
	}
}

// restart starts every node that is not running (net up) and returns
// when they accept connections.
func (n *raftNet) restart(t *testing.T) {
	t.Helper()
	mustCLI(t, "net", "up", "--dir", n.dir)
	n.pids = readPIDs(t, n.lay)
}

// height is node name's block store height from its metrics; -1 when it
// does not answer.
func (n *raftNet) height(name string) int64 {
	nd, _ := n.lay.Node(name)
	h, err := strconv.ParseInt(scrapeGauges(nd.Metrics, "strand_blockstore_height")["strand_blockstore_height"], 10, 64)
	if err != nil {
		return -1
	}
	return h
}

// maxHeight is the greatest height among the named nodes.
func (n *raftNet) maxHeight(names ...string) int64 {
	m := int64(-1)
	for _, name := range names {
		m = max(m, n.height(name))
	}
	return m
}

// awaitHeight waits up to within for node name to reach height h and
// returns how long it took.
func (n *raftNet) awaitHeight(t *testing.T, name string, h int64, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for n.height(name) < h {
		if time.Since(start) > within {
			t.Fatalf("%s at height %d after %v, want %d", name, n.height(name), within, h)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// orderers returns the names of the network's orderers other than not.
func (n *raftNet) orderers(not ...string) []string {
	var out []string
	for _, nd := range n.lay.Nodes {
		if nd.Role.String() == "orderer" && !slices.Contains(not, nd.Name) {
			out = append(out, nd.Name)
		}
	}
	return out
}

// settle waits until every node's chain verifies and they all agree
// (same height and last block hash: `strand net verify`), then checks
// every transaction of the loads on both peers, that the peers agree on
// every account, and the Smallbank invariant.
func (n *raftNet) settle(t *testing.T, loads ...*ledgerLoad) {
	t.Helper()
	for _, l := range loads {
		l.report(t)
	}
	netVerified(t, n)
	var delta int64
	for _, l := range loads {
		delta += l.settle(t, n.ctx, n.c1.Gateway, n.c2.Gateway)
	}
	total := compareAccounts(t, n.ctx, n.c1.Contract(smallbank.Name), n.c2.Contract(smallbank.Name))
	if want := int64(netAccounts*2*netBalance) + delta; total != want {
		t.Fatalf("Smallbank invariant broken: total %d, want %d", total, want)
	}
}

// netVerified runs localnet.Verify (what `strand net verify` runs) and
// gives the nodes up to 30 s to answer and reach the same height and last
// block hash; a block that does not check or nodes that disagree fail at
// once.
func netVerified(t *testing.T, n *raftNet) {
	t.Helper()
	start := time.Now()
	chains, err := localnet.Verify(n.ctx, n.lay, localnet.VerifyOptions{Idle: 150 * time.Millisecond, Settle: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := chains[slices.IndexFunc(chains, func(c localnet.Chain) bool { return !c.Removed })]
	t.Logf("every node verified at height %d, last block %x, %v after the load", c.Height, c.Last, time.Since(start).Round(time.Millisecond))
}

// raftLeader scrapes the live orderers' metrics until one of them other
// than not says it leads; it returns its name and Raft id.
func raftLeader(t *testing.T, lay *localnet.Layout, not string) (string, string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range lay.Nodes {
			if n.Name == not || n.Role.String() != "orderer" {
				continue
			}
			m := scrapeGauges(n.Metrics, "strand_orderer_raft_id", "strand_orderer_raft_leader")
			if id := m["strand_orderer_raft_id"]; id != "" && id != "0" && id == m["strand_orderer_raft_leader"] {
				return n.Name, id
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no orderer other than %q leads after 15 s", not)
	return "", ""
}

// scrapeGauges returns the values of the named unlabelled metrics at
// addr's /metrics; missing ones are absent.
func scrapeGauges(addr string, names ...string) map[string]string {
	out := map[string]string{}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		for _, n := range names {
			if len(f) == 2 && f[0] == n {
				out[n] = f[1]
			}
		}
	}
	return out
}

// ledgerLoad drives Smallbank and remembers, per transaction, what the
// client heard: committed (with its block and the money it moved) or
// unknown (submitted, then no answer).
type ledgerLoad struct {
	mu      sync.Mutex
	acked   map[string]ack // tx id → what the client heard
	unknown map[string]int64
	refused int
	// retryable counts the endorsements refused with a retry hint (429,
	// or a 503 that carries one: the client's retry path); failed keeps
	// the message of every other 5xx refusal.
	retryable int
	failed    []string
	// longest is the longest a client waited on one submitted
	// transaction, for an answer or until it gave up.
	longest time.Duration
}

type ack struct {
	block uint64
	code  api.TxValidationCode
	delta int64
	at    time.Time // when the client heard it
}

func (l *ledgerLoad) run(ctx context.Context, d time.Duration, cs ...*client.Contract) {
	l.acked, l.unknown = map[string]ack{}, map[string]int64{}
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range 8 * len(cs) {
		c := cs[w%len(cs)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			for time.Now().Before(end) && ctx.Err() == nil {
				fn, args, dm := netOp(rng)
				tx, err := c.Endorse(ctx, fn, args...)
				if err != nil {
					var ee *client.EndorseError
					l.mu.Lock()
					l.refused++
					switch {
					case errors.As(err, &ee) && ee.RetryAfter > 0:
						l.retryable++
					case errors.As(err, &ee) && ee.Status < 500:
					default: // a 5xx without a retry hint, or no answer at all
						l.failed = append(l.failed, err.Error())
					}
					l.mu.Unlock()
					if ee != nil && ee.RetryAfter > 0 {
						time.Sleep(ee.RetryAfter) // the client's retry path: wait the hint
					}
					continue
				}
				submitted := time.Now()
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				var commit *client.Commit
				if err = tx.Submit(wctx); err == nil {
					commit, err = tx.Wait(wctx)
				}
				cancel()
				var ce *client.CommitError
				l.mu.Lock()
				l.longest = max(l.longest, time.Since(submitted))
				switch {
				case err == nil:
					l.acked[tx.ID()] = ack{block: commit.Block, code: commit.Code, delta: dm, at: time.Now()}
				case errors.As(err, &ce):
					l.acked[tx.ID()] = ack{block: ce.Block, code: ce.Code, at: time.Now()}
				default:
					l.unknown[tx.ID()] = dm
				}
				l.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func (l *ledgerLoad) report(t *testing.T) {
	valid := 0
	for _, a := range l.acked {
		if a.code == api.TxValidationCode_VALID {
			valid++
		}
	}
	t.Logf("load: %d acknowledged (%d VALID), %d without an answer, %d refused at endorsement (%d with a retry hint, %d 5xx without)",
		len(l.acked), valid, len(l.unknown), l.refused, l.retryable, len(l.failed))
	if valid == 0 {
		t.Fatal("no transaction of the load committed")
	}
}

// settle checks every acknowledged transaction on both peers, resolves
// the unknown ones, and returns the money the committed transactions
// moved.
func (l *ledgerLoad) settle(t *testing.T, ctx context.Context, gws ...*client.Gateway) int64 {
	t.Helper()
	var delta int64
	status := func(g *client.Gateway, id string) (*client.Commit, error) {
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		return g.CommitStatus(cctx, id)
	}
	for id, a := range l.acked {
		for i, g := range gws {
			c, err := status(g, id)
			var ce *client.CommitError
			if errors.As(err, &ce) {
				c, err = &client.Commit{Block: ce.Block, Code: ce.Code}, nil
			}
			if err != nil || c.Block != a.block || c.Code != a.code {
				t.Fatalf("tx %s acknowledged as %v in block %d; peer %d answers %+v, %v", id, a.code, a.block, i, c, err)
			}
		}
		if a.code == api.TxValidationCode_VALID {
			delta += a.delta
		}
	}
	lost := 0
	for id, dm := range l.unknown {
		c, err := status(gws[0], id)
		switch {
		case err == nil && c.Code == api.TxValidationCode_VALID:
			delta += dm
		case err != nil && !errors.As(err, new(*client.CommitError)):
			lost++ // never committed: the client was never told it had
		}
	}
	t.Logf("%d transactions without an answer: %d committed after all, %d never", len(l.unknown), len(l.unknown)-lost, lost)
	return delta
}
