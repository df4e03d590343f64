package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/contracts/smallbank"
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
	// before their removal); channel update recorded their removal in the
	// network directory, so verify leaves them out and the rest must agree.
	if n.lay, err = localnet.Load(n.dir); err != nil {
		t.Fatal(err)
	}
	for _, gone := range originals {
		if !n.lay.Removed(gone) {
			t.Fatalf("%s not recorded as removed: %+v", gone, n.lay.Membership)
		}
	}
	n.settle(t, l)
}

// TestNetRemovedOrderer removes orderer0, the channel's first orderer and
// so the default --at, with `channel update --remove-orderer orderer0`
// (default --at): the network directory then knows it was removed, so
// the default --at is a current orderer (transfer-leader works), an
// explicit --at orderer0 fails at once naming it as removed and a current
// orderer (transfer-leader, --add-orderer), `net up` does not start it
// again, `net status` shows it removed, and `net verify` passes, judging
// only the current orderers and listing orderer0 as removed.
func TestNetRemovedOrderer(t *testing.T) {
	n := startRaftNet(t, localnet.Spec{Orderers: 3})
	out := mustCLI(t, "channel", "update", "--dir", n.dir, "--remove-orderer", "orderer0")
	t.Logf("remove: %s", strings.TrimSpace(out))
	if !strings.Contains(out, "applied by") || strings.Contains(out, "/orderer0@") {
		t.Fatalf("channel update --remove-orderer orderer0 printed %q", out)
	}

	out = mustCLI(t, "orderer", "transfer-leader", "--dir", n.dir, "--to", "orderer2")
	t.Logf("transfer-leader (default --at): %s", strings.TrimSpace(out))
	if !strings.Contains(out, "leader is now orderer2") {
		t.Fatalf("transfer-leader printed %q", out)
	}
	removed := func(what string, args ...string) {
		t.Helper()
		out, err := cli(t, args...)
		if err == nil || !strings.Contains(err.Error(), "orderer0 was removed from the channel") || !strings.Contains(err.Error(), "use --at orderer1") {
			t.Fatalf("%s --at orderer0: %v\n%s", what, err, out)
		}
		t.Logf("%s --at orderer0: %v", what, err)
	}
	removed("transfer-leader", "orderer", "transfer-leader", "--dir", n.dir, "--to", "orderer2", "--at", "orderer0")
	removed("channel update --add-orderer", "channel", "update", "--dir", n.dir, "--add-orderer", "orderer9", "--address", "127.0.0.1:1", "--submit=false", "--at", "orderer0")

	// The channel orders on without orderer0.
	b := strconv.Itoa(netBalance)
	if _, err := n.c1.Contract(smallbank.Name).Submit(n.ctx, "create_account", "900000", "Z", b, b); err != nil {
		t.Fatal(err)
	}

	// net up does not start orderer0 again once it is gone.
	n.kill(t, "orderer0")
	out = mustCLI(t, "net", "up", "--dir", n.dir)
	if !regexp.MustCompile(`(?m)^orderer0 .*removed from the channel: not started`).MatchString(out) {
		t.Fatalf("net up after orderer0's removal printed:\n%s", out)
	}
	for _, p := range localnet.Status(n.lay) {
		if p.Name == "orderer0" && p.Alive {
			t.Fatalf("net up started the removed orderer0 (pid %d)", p.PID)
		}
	}
	out = mustCLI(t, "net", "status", "--dir", n.dir)
	if !regexp.MustCompile(`(?m)^orderer0 .* removed `).MatchString(out) {
		t.Fatalf("net status after orderer0's removal printed:\n%s", out)
	}

	out = mustCLI(t, "net", "verify", "--dir", n.dir, "--settle", "30s")
	t.Logf("net verify:\n%s", out)
	if !regexp.MustCompile(`(?m)^orderer0 +orderer +- +- +- +removed$`).MatchString(out) ||
		!strings.Contains(out, "all 4 nodes answered") || !strings.Contains(out, "1 orderer(s) removed from the channel not judged") {
		t.Fatalf("net verify after orderer0's removal printed:\n%s", out)
	}
}
