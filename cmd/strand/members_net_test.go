package main

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// netRevoke is TestNetLifecycle's revocation step (docs/membership.md):
// Org2's client transacts; `strand channel revoke` revokes its signing
// certificate, and from the next block every peer refuses its proposals
// and the orderer its transactions, each naming the certificate, while
// Org1's client (other) goes on; revoking its TLS certificate then makes
// every peer refuse its TLS handshake, and the CLI say so.
func netRevoke(t *testing.T, ctx context.Context, dir string, lay *localnet.Layout, other *localnet.Conn) {
	t.Helper()
	cl, err := lay.Client("Org2")
	if err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, "invoke", "--dir", dir, "--org", "Org2", "--contract", "kv", "insert", "revoked-before", "v"); !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke by Org2's client before its revocation:\n%s", out)
	}
	signer, err := cl.Signer()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out := mustCLI(t, "channel", "revoke", "--dir", dir, "--org", "Org2", "--cert", cl.Cert)
	t.Logf("channel revoke (%s): %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
	if !strings.Contains(out, "membership update 0") || !strings.Contains(out, "in force on every peer") {
		t.Fatalf("channel revoke printed %q", out)
	}
	revoked := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "revoked") || !strings.Contains(err.Error(), `org "Org2"`) || !strings.Contains(err.Error(), "CN="+cl.Name) {
			t.Errorf("%s: %v, want an error naming the revoked certificate of Org2's %s", what, err, cl.Name)
		}
	}
	for _, n := range lay.Nodes {
		if n.Role != identity.RolePeer {
			continue
		}
		c, err := lay.ConnectAs(cl, n.Name)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Contract("kv").Evaluate(ctx, "read", "revoked-before")
		revoked("proposal of the revoked client to "+n.Name, err)
		c.Close()
	}
	// Its transaction, sent straight to an orderer, is refused there.
	nonce := []byte(time.Now().String())
	raw, _, err := api.BuildTx(api.TxSpec{Channel: other.Channel, Contract: "kv", Function: "insert", Nonce: nonce, RWSet: &api.RWSet{}}, signer, []api.Signer{signer})
	if err != nil {
		t.Fatal(err)
	}
	err = submitToOrderer(ctx, lay, "", raw)
	revoked("transaction of the revoked client to the orderer", err)
	// Other clients are unaffected.
	if _, err := other.Contract("kv").Submit(ctx, "insert", "revoked-after", "v"); err != nil {
		t.Fatalf("Org1's client after Org2's client was revoked: %v", err)
	}

	// Revoking its TLS certificate (the next membership update) closes
	// the door before any proposal: the handshake is refused.
	out = mustCLI(t, "channel", "revoke", "--dir", dir, "--org", "Org2", "--cert", cl.TLSCert)
	if !strings.Contains(out, "membership update 1") {
		t.Fatalf("second channel revoke printed %q", out)
	}
	c, err := lay.ConnectAs(cl, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Contract("kv").Evaluate(ctx, "read", "revoked-before"); err == nil {
		t.Errorf("a client whose TLS certificate is revoked was served")
	} else {
		t.Logf("revoked TLS certificate: %v", err)
	}
	if err := c.Probe(ctx); !errors.Is(err, node.ErrTLSRefused) {
		t.Errorf("probing peer0.Org2 with the revoked TLS certificate: %v, want ErrTLSRefused", err)
	}
	// The CLI says the peer runs and refused the certificate, and why
	// that may be, not "is it running?".
	_, err = cli(t, "query", "--dir", dir, "--org", "Org2", "--contract", "kv", "read", "revoked-before")
	if err == nil || !strings.Contains(err.Error(), "is running but refused this client's TLS certificate") || strings.Contains(err.Error(), "is it running?") {
		t.Errorf("query by the client whose TLS certificate is revoked: %v, want an error saying the peer refused its certificate", err)
	} else {
		t.Logf("strand query: %v", err)
	}
}

// netAddOrg is TestNetLifecycle's add-org step (docs/membership.md):
// `strand net add-org` generates Org3, has the channel add it and starts
// peer0.Org3, caught up; Org3's client then commits a kv transaction
// (OR(Org1, Org2): endorsed by the genesis orgs' peers) and every node,
// peer0.Org3 included, agrees on the chain (net verify). It returns
// peer0.Org3's PID, recorded for net down.
func netAddOrg(t *testing.T, dir string) (string, int) {
	t.Helper()
	start := time.Now()
	out := mustCLI(t, "net", "add-org", "--dir", dir, "--org", "Org3")
	t.Logf("net add-org (%s):\n%s", time.Since(start).Round(time.Millisecond), out)
	if !strings.Contains(out, "added org Org3: membership update 2 ") || !strings.Contains(out, "caught up to peer0.Org1 at height") {
		t.Fatalf("net add-org printed %q", out)
	}
	if _, err := cli(t, "net", "add-org", "--dir", dir, "--org", "Org3"); err == nil || !strings.Contains(err.Error(), `already has org "Org3"`) {
		t.Errorf("net add-org of Org3 again: %v, want an error saying the network has it", err)
	}
	if out := mustCLI(t, "invoke", "--dir", dir, "--org", "Org3", "--contract", "kv", "insert", "org3-key", "v"); !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke by Org3's client:\n%s", out)
	}
	// net verify would fail here: Org2's client, which it reads
	// peer0.Org2 as, had its TLS certificate revoked (netRevoke). So
	// peer0.Org3, read as Org1's client (Layout.ConnectReader), is
	// compared with peer0.Org1 directly: same height, same kv value.
	lay, err := localnet.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := lay.Node("peer0.Org1")
	p3, _ := lay.Node("peer0.Org3")
	c1, err := lay.ConnectReader(p1)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c3, err := lay.ConnectReader(p3)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		h1, err1 := c1.Height(ctx, 200*time.Millisecond)
		h3, err3 := c3.Height(ctx, 200*time.Millisecond)
		if err1 == nil && err3 == nil && h1 == h3 {
			t.Logf("peer0.Org1 and peer0.Org3 at height %d", h1)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("peer0.Org3 at height %d (%v), peer0.Org1 at %d (%v) 5s after Org3's invoke", h3, err3, h1, err1)
		}
	}
	for _, c := range []*localnet.Conn{c1, c3} {
		if v, err := c.Contract("kv").Evaluate(ctx, "read", "org3-key"); err != nil || string(v) != "v" {
			t.Errorf("%s reads kv org3-key = %q, %v: want Org3's client's value", c.Peer.Name, v, err)
		}
	}
	status := mustCLI(t, "net", "status", "--dir", dir)
	if !regexp.MustCompile(`(?m)^peer0\.Org3\s+peer\s+\S+\s+\d+\s+running\s+yes\s+\d+\s`).MatchString(status) {
		t.Errorf("net status shows peer0.Org3 not running or without a height:\n%s", status)
	}
	raw, err := os.ReadFile(lay.PIDFile("peer0.Org3"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("net add-org step: %s", time.Since(start).Round(time.Millisecond))
	return "peer0.Org3", pid
}

// netRemoveOrg is TestNetLifecycle's last membership step: Org2 leaves
// the 3-org channel, and the contracts stay governable without it. The
// default lifecycle policy follows membership (a majority of Org1 and
// Org3's admins now; fixed at genesis it would need Org2's, which no
// longer counts), so kv is upgraded to a policy naming Org3; the upgrade
// waits on every peer but peer0.Org2, which refuses this network's
// clients now, and says so; Org1's client then commits through Org1's
// gateway, which asks peer0.Org3 (added with its address).
func netRemoveOrg(t *testing.T, dir string) {
	t.Helper()
	if out := mustCLI(t, "channel", "remove-org", "--dir", dir, "--org", "Org2"); !strings.Contains(out, "removed org Org2") {
		t.Fatalf("channel remove-org printed %q", out)
	}
	out := mustCLI(t, "contract", "upgrade", "kv", "--dir", dir, "--builtin", "--policy", "AND('Org1.peer','Org3.peer')")
	if !strings.Contains(out, "in force on every peer") || !strings.Contains(out, "not asked: peer0.Org2 (their orgs were removed") {
		t.Fatalf("contract upgrade after Org2's removal printed %q", out)
	}
	if out := mustCLI(t, "invoke", "--dir", dir, "--org", "Org1", "--contract", "kv", "insert", "after-org2", "v"); !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke under AND(Org1, Org3):\n%s", out)
	}
}
