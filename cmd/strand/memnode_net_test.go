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

	"gopkg.in/yaml.v3"

	"github.com/strand-ledger/strand/internal/metriclint"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// neverFlush has the memory node of peer never write its memory tier
// through to storage during the test (a 64 MiB tier, flushed every
// million blocks or hour), so that a SIGKILL loses every block.
func neverFlush(t *testing.T, lay *localnet.Layout, peer string) localnet.Node {
	t.Helper()
	for _, mn := range lay.Memnodes {
		if mn.Serves != peer {
			continue
		}
		raw, err := os.ReadFile(mn.Config)
		if err != nil {
			t.Fatal(err)
		}
		var cfg node.MemnodeConfig
		if err := yaml.Unmarshal(raw, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg.MemoryMB, cfg.FlushBlocks, cfg.FlushInterval = 64, 1000000, time.Hour
		if raw, err = yaml.Marshal(&cfg); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(mn.Config, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return mn
	}
	t.Fatalf("no memory node serves %s (Spec.Memnodes)", peer)
	return localnet.Node{}
}

// killMemnode SIGKILLs the memory node's process (its PID file of net up)
// and waits until it is gone.
func killMemnode(t *testing.T, lay *localnet.Layout, mn localnet.Node) {
	t.Helper()
	raw, err := os.ReadFile(lay.PIDFile(mn.Name))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL to memory node %s (pid %d): %v", mn.Name, pid, err)
	}
	for {
		alive := false
		for _, p := range localnet.Status(lay) {
			if p.Name == mn.Name {
				alive = p.Alive
			}
		}
		if !alive {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func logTail(t *testing.T, path string) string {
	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// TestNetMemnodeKill runs a network whose peers keep their state in
// memory nodes of their own (Spec.Memnodes: real processes, mutual TLS)
// and SIGKILLs peer0.Org1's memory node under a Smallbank load, then
// starts it again with net up. The peer must neither crash nor skip a block: while
// the node is down its committer waits (the peer falls behind), and once
// the node is back (at its storage savepoint) it re-applies the lost
// blocks from its block store and catches up. Then every node agrees on
// the chain (net verify), every acknowledged transaction is on both
// peers at its block, every account reads the same on peer0.Org1 and on
// peer0.Org2 (whose memory node is never killed), and the Smallbank
// invariant holds. The times to listen again and to catch up are logged
// (measured, not asserted).
func TestNetMemnodeKill(t *testing.T) {
	const peer = "peer0.Org1"
	var mn localnet.Node
	n := startRaftNet(t, localnet.Spec{Orderers: 1, Memnodes: true}, func(lay *localnet.Layout) { mn = neverFlush(t, lay, peer) })
	st := mustCLI(t, "net", "status", "--dir", n.dir)
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(mn.Name) + `\s+memnode\s+` + regexp.QuoteMeta(mn.Address) + `\s+\d+\s+running\s+yes`).MatchString(st) {
		t.Fatalf("net status does not list memory node %s running and reachable:\n%s", mn.Name, st)
	}
	l, done := n.load(8 * time.Second)
	time.Sleep(3 * time.Second) // the kill falls in the middle of the load
	logSize := fileSize(n.lay.LogFile(peer))
	killMemnode(t, n.lay, mn)
	killedAt := n.height(peer)
	time.Sleep(time.Second) // the peer runs without its memory node
	stalled := n.height(peer)
	start := time.Now()
	if out := mustCLI(t, "net", "up", "--dir", n.dir); !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(mn.Name) + `\s+memnode\s.*\sstarted\s`).MatchString(out) {
		t.Fatalf("net up does not say it started %s again:\n%s", mn.Name, out)
	}
	listening := time.Since(start)
	target := n.maxHeight(n.orderers()...)
	caught := n.awaitHeight(t, peer, target, 60*time.Second)
	t.Logf("memory node SIGKILLed at peer height %d (height %d a second later); listening again %v after its start, peer at the orderer's height %d %v later",
		killedAt, stalled, listening.Round(time.Millisecond), target, (listening + caught).Round(time.Millisecond))
	<-done
	n.settle(t, l)
	log := logRepairLines(t, n.lay.LogFile(peer), logSize)
	for _, want := range []string{"state database unavailable", "state restored from the block store"} {
		if !strings.Contains(log, want) {
			t.Errorf("the peer's log does not say %q after the kill:\n%s", want, log)
		}
	}
	nd, _ := n.lay.Node(peer)
	pm := scrapeGauges(nd.Metrics, "strand_committer_state_losses_total", "strand_committer_state_waits_total",
		"strand_memnode_client_cache_hits_total", "strand_memnode_client_remote_reads_total", "strand_memnode_client_unavailable_total")
	t.Logf("peer metrics: %v", pm)
	if pm["strand_committer_state_losses_total"] != "1" {
		t.Errorf("strand_committer_state_losses_total = %q; want 1: the kill lost every block (nothing is flushed)", pm["strand_committer_state_losses_total"])
	}
	t.Logf("memory node metrics: %v", scrapeGauges(mn.Metrics, "strand_memnode_tiers_memory_bytes", "strand_memnode_tiers_height",
		"strand_memnode_tiers_durable", "strand_memnode_applies_total", "strand_memnode_gets_total"))
	t.Logf("memory node log:\n%s", logTail(t, n.lay.LogFile(mn.Name)))
	// A memory node's whole /metrics page follows Prometheus' conventions
	// (the node package's tests lint peers' and orderers').
	resp, err := http.Get("http://" + mn.Metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := metriclint.Lint(page)
	if err != nil || len(problems) > 0 {
		t.Errorf("the memory node's metrics: %v %q", err, problems)
	}
}
