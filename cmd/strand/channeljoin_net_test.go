package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestNetChannelJoinLeave: a running network of real processes (2 orgs,
// one orderer) gets a channel it was not started with: `channel create`
// writes its genesis document, `channel join` has the orderer and both
// peers join it as their orgs' admins; it carries transactions apart
// from demo; a SIGKILL of the orderer and a peer, then a restart, keeps
// it served with its state; `channel leave` takes it away from every
// node and deletes its ledgers, which a restart does not bring back.
func TestNetChannelJoinLeave(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network of processes")
	}
	dir := filepath.Join(t.TempDir(), "net")
	mustCLI(t, "net", "up", "--dir", dir, "--orgs", "2", "--orderers", "1")
	t.Cleanup(func() { cli(t, "net", "down", "--dir", dir) })
	if out := mustCLI(t, "channel", "create", "--dir", dir, "--channel", "live"); !strings.Contains(out, "channel live: genesis document") {
		t.Fatalf("channel create:\n%s", out)
	}
	out := mustCLI(t, "channel", "join", "--dir", dir, "--channel", "live")
	for _, want := range []string{`orderer0\s+live\s+1\s+joined`, `peer0.Org1\s+live\s+0\s+joined`, `peer0.Org2\s+live\s+0\s+joined`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("channel join: no line matching %q in\n%s", want, out)
		}
	}
	if _, err := cli(t, "channel", "join", "--dir", dir, "--channel", "live", "--node", "peer0.Org1"); err == nil || !strings.Contains(err.Error(), "1 of 1 nodes refused") {
		t.Errorf("joining live again: %v, want a refusal", err)
	}
	if out := mustCLI(t, "invoke", "--dir", dir, "--channel", "live", "create_account", "a", "A", "7", "0"); !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke on live:\n%s", out)
	}
	if _, err := cli(t, "query", "--dir", dir, "query", "a"); err == nil || !strings.Contains(err.Error(), `account "a" does not exist`) {
		t.Errorf("query a on demo: %v, want no such account", err)
	}
	if out := mustCLI(t, "channel", "list", "--dir", dir, "--org", "Org2"); out != "demo\nlive\n" {
		t.Errorf("channel list at Org2: %q, want demo and live", out)
	}
	out = mustCLI(t, "channel", "list", "--dir", dir, "--node", "orderer0")
	for _, want := range []string{`demo\s+\d+\s+node file\s+[0-9a-f]{64}`, `live\s+\d+\s+joined\s+[0-9a-f]{64}`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("channel list --node orderer0: no line matching %q in\n%s", want, out)
		}
	}

	lay, err := localnet.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	pids := readPIDs(t, lay)
	for _, name := range []string{"orderer0", "peer0.Org1"} {
		if err := syscall.Kill(pids[name], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		netWaitGone(t, pids[name])
	}
	mustCLI(t, "net", "up", "--dir", dir)
	if out := mustCLI(t, "query", "--dir", dir, "--channel", "live", "query", "a"); !strings.Contains(out, `"checking":7`) {
		t.Errorf("query a on live after the restart: %s", out)
	}
	if out := mustCLI(t, "invoke", "--dir", dir, "--channel", "live", "deposit_checking", "a", "1"); !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke on live after the restart:\n%s", out)
	}

	if _, err := cli(t, "channel", "leave", "--dir", dir, "--channel", "demo", "--node", "peer0.Org1"); err == nil || !strings.Contains(err.Error(), "1 of 1 nodes refused") {
		t.Errorf("leaving demo, of the node file: %v, want a refusal", err)
	}
	out = mustCLI(t, "channel", "leave", "--dir", dir, "--channel", "live")
	for _, want := range []string{`peer0.Org1\s+live\s+\d+\s+left`, `peer0.Org2\s+live\s+\d+\s+left`, `orderer0\s+live\s+\d+\s+left`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("channel leave: no line matching %q in\n%s", want, out)
		}
	}
	if _, err := cli(t, "query", "--dir", dir, "--channel", "live", "query", "a"); err == nil || !strings.Contains(err.Error(), `unknown channel "live"`) {
		t.Errorf("query on live after the leave: %v, want unknown channel", err)
	}
	for _, n := range lay.Nodes {
		cfg, err := node.LoadNode(n.Config)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "channels", "live")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s's ledger of live after the leave: %v; want it deleted", n.Name, err)
		}
	}
	pids = readPIDs(t, lay)
	if err := syscall.Kill(pids["peer0.Org1"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	netWaitGone(t, pids["peer0.Org1"])
	mustCLI(t, "net", "up", "--dir", dir)
	if out := mustCLI(t, "channel", "list", "--dir", dir); out != "demo\n" {
		t.Errorf("channel list after a restart: %q, want demo alone", out)
	}
	if out := mustCLI(t, "invoke", "--dir", dir, "create_account", "d", "D", "1", "0"); !strings.Contains(out, "code    VALID") {
		t.Errorf("invoke on demo after everything:\n%s", out)
	}
	mustCLI(t, "net", "down", "--dir", dir)
}
