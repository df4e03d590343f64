package main

import (
	"context"
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
// every peer refuse its TLS handshake.
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
	_ = node.ErrUntrustedPeer
}
