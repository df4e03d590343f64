package main

import (
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/localnet"
)

// TestNetRaftTransferLeader runs three orderer processes under Smallbank
// load from both orgs and moves the Raft leadership with `strand orderer
// transfer-leader` (as OrdererOrg's admin, asked at a follower that is
// not the target); the new leader is the one named, the load goes on,
// and every node's chain agrees (settle). Then leadership moves back,
// asked at the leader itself.
func TestNetRaftTransferLeader(t *testing.T) {
	n := startRaftNet(t, localnet.Spec{Orderers: 3})
	l, loadDone := n.load(5 * time.Second)
	time.Sleep(time.Second)
	old, _ := raftLeader(t, n.lay, "")
	others := n.orderers(old)
	target, via := others[0], others[1]
	start := time.Now()
	out := mustCLI(t, "orderer", "transfer-leader", "--dir", n.dir, "--to", target, "--at", via)
	took := time.Since(start)
	if !strings.Contains(out, "leader is now "+target) {
		t.Fatalf("transfer-leader printed %q, want the new leader %s", out, target)
	}
	if now, _ := raftLeader(t, n.lay, old); now != target {
		t.Fatalf("%s leads after the transfer to %s", now, target)
	}
	t.Logf("moved leadership from %s to %s under load: %s (CLI round trip %s)", old, target, strings.TrimSpace(out), took.Round(time.Millisecond))
	<-loadDone
	mustCLI(t, "orderer", "transfer-leader", "--dir", n.dir, "--to", old, "--at", target)
	if now, _ := raftLeader(t, n.lay, target); now != old {
		t.Fatalf("%s leads after the transfer back to %s", now, old)
	}
	n.settle(t, l)
}
