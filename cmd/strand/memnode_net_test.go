package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// memnodeProc is a `strand memnode start` process of a test network.
type memnodeProc struct {
	config, addr, log, metrics string
	cmd                        *exec.Cmd
}

// withMemnode gives peer its state on a memory node: it writes
// nodes/memnode.yaml (the peer's org CA and TLS key pair; never flushed
// by the test's end, so that a SIGKILL loses every block), points the peer's
// stateDB at it and starts it, to be killed at cleanup.
func withMemnode(t *testing.T, lay *localnet.Layout, peer string) *memnodeProc {
	t.Helper()
	nd, ok := lay.Node(peer)
	if !ok {
		t.Fatalf("no node %s", peer)
	}
	raw, err := os.ReadFile(nd.Config)
	if err != nil {
		t.Fatal(err)
	}
	var cfg node.NodeConfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join("..", "crypto", nd.Org, "ca.pem")
	m := &memnodeProc{config: filepath.Join(filepath.Dir(nd.Config), "memnode.yaml"), addr: freeAddr(t),
		log: filepath.Join(lay.Dir, "logs", "memnode.log")}
	m.metrics = freeAddr(t)
	mc := node.MemnodeConfig{Listen: m.addr, DataDir: filepath.Join("..", "data", "memnode"), MemoryMB: 64,
		FlushBlocks: 1000000, FlushInterval: time.Hour, TLS: cfg.TLS, CAs: []string{ca}, Metrics: m.metrics}
	writeYAMLFile(t, m.config, &mc)
	cfg.StateDB.Backend = "memnode"
	cfg.StateDB.Memnode = node.MemnodeClientConfig{Address: m.addr, CAs: []string{ca}}
	writeYAMLFile(t, nd.Config, &cfg)
	m.start(t)
	t.Cleanup(func() { m.stop(syscall.SIGKILL) })
	return m
}

func writeYAMLFile(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// start runs the memory node (this test binary stands in for strand) and
// waits until it accepts connections.
func (m *memnodeProc) start(t *testing.T) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(m.log), 0o755); err != nil {
		t.Fatal(err)
	}
	logf, err := os.OpenFile(m.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	m.cmd = exec.Command(exe, "memnode", "start", "--config", m.config)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", m.addr, time.Second); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory node not listening on %s after 60 s; log:\n%s", m.addr, logTail(t, m.log))
		}
	}
}

// stop signals the memory node and waits for it to exit.
func (m *memnodeProc) stop(sig syscall.Signal) {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Signal(sig)
	_ = m.cmd.Wait()
	m.cmd = nil
}

func logTail(t *testing.T, path string) string {
	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// TestNetMemnodeKill runs peer0.Org1 on a memory node (real processes,
// mutual TLS) and SIGKILLs the memory node under a Smallbank load, then
// starts it again. The peer must neither crash nor skip a block: while
// the node is down its committer waits (the peer falls behind), and once
// the node is back (at its storage savepoint) it re-applies the lost
// blocks from its block store and catches up. Then every node agrees on
// the chain (net verify), every acknowledged transaction is on both
// peers at its block, every account reads the same on peer0.Org1 and on
// peer0.Org2 (Pebble), and the Smallbank invariant holds. The times to
// listen again and to catch up are logged (measured, not asserted).
func TestNetMemnodeKill(t *testing.T) {
	const peer = "peer0.Org1"
	var mn *memnodeProc
	n := startRaftNet(t, localnet.Spec{Orderers: 1}, func(lay *localnet.Layout) { mn = withMemnode(t, lay, peer) })
	l, done := n.load(8 * time.Second)
	time.Sleep(3 * time.Second) // the kill falls in the middle of the load
	logSize := fileSize(n.lay.LogFile(peer))
	mn.stop(syscall.SIGKILL)
	killedAt := n.height(peer)
	time.Sleep(time.Second) // the peer runs without its memory node
	stalled := n.height(peer)
	start := time.Now()
	mn.start(t)
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
		"strand_memnode_client_cache_hits", "strand_memnode_client_remote_reads", "strand_memnode_client_unavailable")
	t.Logf("peer metrics: %v", pm)
	if pm["strand_committer_state_losses_total"] != "1" {
		t.Errorf("strand_committer_state_losses_total = %q; want 1: the kill lost every block (nothing is flushed)", pm["strand_committer_state_losses_total"])
	}
	t.Logf("memory node metrics: %v", scrapeGauges(mn.metrics, "strand_memnode_tiers_memory_bytes", "strand_memnode_tiers_height",
		"strand_memnode_tiers_durable", "strand_memnode_applies", "strand_memnode_gets"))
	t.Logf("memory node log:\n%s", logTail(t, mn.log))
}
