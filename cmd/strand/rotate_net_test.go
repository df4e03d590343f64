package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestNetRotate: `net rotate` gives Org2's peer, then the orderer, new
// certificates while the network of real processes (two channels) runs,
// restarting each alone, and revokes the old ones on both channels, each
// its own membership update: transactions that need Org2's
// endorsement and the orderer's blocks keep committing, signed by the new
// identities; the peer's old TLS certificate opens no connection to the
// other peer, its new one does; every peer ends with the same state.
func TestNetRotate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network of processes")
	}
	dir := filepath.Join(t.TempDir(), "net")
	mustCLI(t, "net", "up", "--dir", dir, "--orgs", "2", "--orderers", "1", "--channels", "2")
	t.Cleanup(func() { cli(t, "net", "down", "--dir", dir) })
	if out := mustCLI(t, "invoke", "--dir", dir, "create_account", "a", "A", "7", "0"); !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke before the rotations:\n%s", out)
	}
	lay, err := localnet.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := lay.Node("peer0.Org2")
	cfg, err := node.LoadNode(p2.Config)
	if err != nil {
		t.Fatal(err)
	}
	oldTLSCert, oldTLSKey := filepath.Join(t.TempDir(), "old-tls-cert.pem"), filepath.Join(t.TempDir(), "old-tls-key.pem")
	for _, c := range []struct{ from, to string }{{cfg.TLS.Cert, oldTLSCert}, {cfg.TLS.Key, oldTLSKey}} {
		raw, err := os.ReadFile(c.from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.to, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	for i, name := range []string{"peer0.Org2", "orderer0"} {
		out := mustCLI(t, "net", "rotate", "--dir", dir, "--node", name)
		t.Logf("net rotate --node %s:\n%s", name, out)
		seq := string(rune('0' + i))
		for _, want := range []string{name + ": signing certificate serial", name + ": restarted with its new certificates",
			"membership update " + seq + " of channel demo (", "membership update " + seq + " of channel demo2 (", "in force on every peer"} {
			if !strings.Contains(out, want) {
				t.Errorf("net rotate --node %s: no %q in\n%s", name, want, out)
			}
		}
		if out := mustCLI(t, "invoke", "--dir", dir, "deposit_checking", "a", "1"); !strings.Contains(out, "code    VALID") {
			t.Fatalf("invoke after rotating %s:\n%s", name, out)
		}
	}
	if out := mustCLI(t, "query", "--dir", dir, "--org", "Org2", "query", "a"); !strings.Contains(out, `"checking":9`) {
		t.Errorf("query a at Org2 after the rotations: %s", out)
	}

	// peer0.Org2's old TLS certificate is refused by peer0.Org1.
	ch, err := node.LoadChannel(lay.Channel)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := node.ClientTLS(ch, oldTLSCert, oldTLSKey)
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := lay.Node("peer0.Org1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := node.ProbeTLS(ctx, p1.Address, tlsCfg); err == nil || !strings.Contains(err.Error(), "refused by the node") {
		t.Errorf("a TLS handshake with peer0.Org2's old certificate: %v, want it refused", err)
	}
	newCfg, err := node.ClientTLS(ch, cfg.TLS.Cert, cfg.TLS.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.ProbeTLS(ctx, p1.Address, newCfg); err != nil {
		t.Errorf("a TLS handshake with peer0.Org2's new certificate: %v", err)
	}
	mustCLI(t, "net", "verify", "--dir", dir)
	mustCLI(t, "net", "down", "--dir", dir)
}
