package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/localnet"
)

// TestNetRaftConfigUpdate runs three orderer processes under Smallbank
// load from both orgs; `strand net add-orderer` and `strand channel
// update --add-orderer` (signed by every org's admin) add a fourth, which
// `net up` starts and which catches up and orders with the others; then
// `strand channel update --remove-orderer` removes the three originals
// one by one, which stop ordering, until the new one orders alone: the
// peers keep following and submitting because they adopt the orderer set
// of the config blocks. The load goes on throughout, and every remaining
// node's chain agrees (settle: same height and last block hash on the
// orderer and both peers, every acknowledged transaction on both peers).
func TestNetRaftConfigUpdate(t *testing.T) {
	n := startRaftNet(t, localnet.Spec{Orderers: 3})
	l, loadDone := n.load(10 * time.Second)
	time.Sleep(time.Second)

	mustCLI(t, "net", "add-orderer", "--dir", n.dir, "--name", "orderer3")
	lay, err := localnet.Load(n.dir)
	if err != nil {
		t.Fatal(err)
	}
	n.lay = lay
	out := mustCLI(t, "channel", "update", "--dir", n.dir, "--add-orderer", "orderer3")
	t.Logf("add: %s", strings.TrimSpace(out))
	if !strings.Contains(out, "applied by") || !strings.Contains(out, "4=OrdererOrg/orderer3") {
		t.Fatalf("channel update --add-orderer printed %q", out)
	}
	start := time.Now()
	n.restart(t) // net up: starts orderer3
	target := n.maxHeight("orderer0", "orderer1", "orderer2")
	took := n.awaitHeight(t, "orderer3", target, 30*time.Second)
	t.Logf("orderer3 started and reached height %d in %s (%s after net up returned)", target, time.Since(start).Round(time.Millisecond), took.Round(time.Millisecond))

	// Remove the three original orderers one by one, followers first,
	// asking orderer3: in the end it orders alone, and the peers, whose
	// channel file names only the originals, follow it and submit to it
	// because they adopted the orderer set of the config blocks.
	leader, _ := raftLeader(t, n.lay, "")
	originals := append(n.orderers(leader, "orderer3"), leader)
	for _, gone := range originals {
		out = mustCLI(t, "channel", "update", "--dir", n.dir, "--remove-orderer", gone, "--at", "orderer3")
		t.Logf("remove %s: %s", gone, strings.TrimSpace(out))
		if !strings.Contains(out, "applied by") || strings.Contains(out, "/"+gone+"@") {
			t.Fatalf("channel update --remove-orderer printed %q", out)
		}
		time.Sleep(500 * time.Millisecond) // under load between the updates
	}
	<-loadDone
	// The removed orderers stop ordering (their chains end at or just
	// before their removal); the rest must agree.
	n.kill(t, originals...)
	n.lay.Nodes = slices.DeleteFunc(n.lay.Nodes, func(nd localnet.Node) bool { return slices.Contains(originals, nd.Name) })
	n.settle(t, l)
}
