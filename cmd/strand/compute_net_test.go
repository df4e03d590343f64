package main

import (
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/localnet"
)

// poolGauges scrapes peer's endorsement pool metrics.
func (n *raftNet) poolGauges(peer string) map[string]string {
	nd, _ := n.lay.Node(peer)
	return scrapeGauges(nd.Metrics, "strand_pool_members", "strand_pool_joins_total", "strand_pool_leaves_total", "strand_pool_failovers_total")
}

// awaitPool waits up to 20 s until peer's pool says what holds.
func (n *raftNet) awaitPool(t *testing.T, peer, what string, holds func(members, joins, leaves int) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		g := n.poolGauges(peer)
		m, _ := strconv.Atoi(g["strand_pool_members"])
		j, _ := strconv.Atoi(g["strand_pool_joins_total"])
		l, _ := strconv.Atoi(g["strand_pool_leaves_total"])
		if holds(m, j, l) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's pool after 20 s: %v; want %s", peer, g, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killCompute SIGKILLs compute node name (its PID file of net up) and
// waits until it is gone.
func killCompute(t *testing.T, lay *localnet.Layout, name string) {
	t.Helper()
	raw, err := os.ReadFile(lay.PIDFile(name))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL to compute node %s (pid %d): %v", name, pid, err)
	}
	netWaitGone(t, pid)
}

// TestNetComputeKill runs peer0.Org1 as a logical peer: its memory node
// (Spec.Memnodes) and compute nodes, real processes that net scale
// starts and stops while Smallbank load runs from both orgs. Two compute
// nodes join live; one is SIGKILLed mid-load and leaves the pool; net
// scale then brings it back and adds a third, and scales down to one.
// Every endorsement refusal must be a contract's (4xx) or carry a retry
// hint (the client's retry path): a dying compute node costs at most its
// in-flight proposals another ask. At the end every node agrees on the
// chain (net verify), every acknowledged transaction is on both peers at
// its block, the peers agree on every account, and the Smallbank
// invariant holds.
func TestNetComputeKill(t *testing.T) {
	const peer = "peer0.Org1"
	n := startRaftNet(t, localnet.Spec{Orderers: 1, Memnodes: true})
	if out, err := cli(t, "net", "scale", "--dir", n.dir, "--compute", "x=1"); err == nil || !strings.Contains(err.Error(), `"x" is neither an org with peers`) {
		t.Fatalf("net scale --compute x=1: %v\n%s; want an error naming x", err, out)
	}
	out := mustCLI(t, "net", "scale", "--dir", n.dir, "--compute", "Org1=2")
	for _, name := range []string{"compute0." + peer, "compute1." + peer} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s+` + peer + `\s.*\sstarted$`).MatchString(out) {
			t.Fatalf("net scale does not say it started %s:\n%s", name, out)
		}
	}
	n.lay = mustLoad(t, n.dir)
	n.awaitPool(t, peer, "2 members", func(m, _, _ int) bool { return m == 2 })
	st := mustCLI(t, "net", "status", "--dir", n.dir)
	if !regexp.MustCompile(`(?m)^compute1\.peer0\.Org1\s+compute\s+\S+\s+\d+\s+running\s+yes\s+\d+ \(in peer0\.Org1's pool\)`).MatchString(st) {
		t.Fatalf("net status does not list compute1.%s running and reachable:\n%s", peer, st)
	}

	l, done := n.load(8 * time.Second)
	time.Sleep(2 * time.Second) // the kill falls in the middle of the load
	killCompute(t, n.lay, "compute0."+peer)
	killed := time.Now()
	n.awaitPool(t, peer, "compute0 gone: 1 member, 1 leave", func(m, _, l int) bool { return m == 1 && l == 1 })
	t.Logf("compute0 SIGKILLed; out of the pool %v later", time.Since(killed).Round(time.Millisecond))
	time.Sleep(time.Second)                                           // load on one compute node
	mustCLI(t, "net", "scale", "--dir", n.dir, "--compute", "Org1=3") // restarts compute0, adds compute2
	n.lay = mustLoad(t, n.dir)
	n.awaitPool(t, peer, "3 members", func(m, _, _ int) bool { return m == 3 })
	time.Sleep(time.Second) // load on three
	mustCLI(t, "net", "scale", "--dir", n.dir, "--compute", "peer0.Org1=1")
	n.lay = mustLoad(t, n.dir)
	n.awaitPool(t, peer, "1 member", func(m, _, _ int) bool { return m == 1 })
	if got := len(n.lay.ComputesOf(peer)); got != 1 {
		t.Fatalf("after scaling down to 1 the layout lists %d compute nodes of %s", got, peer)
	}
	<-done
	n.settle(t, l)
	if len(l.failed) > 0 {
		t.Fatalf("%d endorsements refused with a 5xx and no retry hint, the first: %s", len(l.failed), l.failed[0])
	}
	nd, _ := n.lay.Node(peer)
	t.Logf("%s pool: %v", peer, n.poolGauges(peer))
	served := scrapeLabelled(t, nd.Metrics, "strand_pool_served_total")
	t.Logf("proposals served: %v; failed asks: %v", served, scrapeLabelled(t, nd.Metrics, "strand_pool_failed_total"))
	var byCompute float64
	for name, v := range served {
		if name != peer {
			byCompute += v
		}
	}
	if byCompute == 0 {
		t.Errorf("the compute nodes %s has now served no proposal: %v", peer, served)
	}

	// The primary fails: SIGKILL, then net up restarts it (its block store
	// and memory node are intact); its compute node joins it again by
	// itself and endorses for it.
	n.kill(t, peer)
	n.restart(t)
	n.awaitPool(t, peer, "compute0 joined the restarted primary", func(m, j, _ int) bool { return m == 1 && j == 1 })
	c := netConnect(t, n.lay, "Org1", "").Contract(smallbank.Name)
	for i := range 5 {
		if _, err := c.SubmitWithRetry(n.ctx, 20, "deposit_checking", strconv.Itoa(i), "1"); err != nil {
			t.Fatalf("deposit %d after the primary's restart: %v", i, err)
		}
	}
	if served := scrapeLabelled(t, nd.Metrics, "strand_pool_served_total"); served["compute0."+peer] != 5 {
		t.Fatalf("after the primary's restart its pool served %v; want the five deposits endorsed by compute0.%s", served, peer)
	}
	netVerified(t, n)
}

// mustLoad reloads the network's layout (net scale changed it).
func mustLoad(t *testing.T, dir string) *localnet.Layout {
	t.Helper()
	lay, err := localnet.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return lay
}

// scrapeLabelled returns the values of metric name by its "key" label.
func scrapeLabelled(t *testing.T, addr, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{member="([^"]+)"\} (\S+)$`)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	body := string(raw)
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		out[m[1]] = v
	}
	return out
}
