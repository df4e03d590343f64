package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/identity"
)

// TestOrgCmdErrors: add-org and remove-org refuse bad input by name
// before they contact a network: a missing flag, a CA certificate that
// is not the named org's, a file with no certificate, a bad --peer.
func TestOrgCmdErrors(t *testing.T) {
	dir := t.TempDir()
	ca, err := identity.NewCA("Org1", identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := ca.MarshalPEM()
	if err != nil {
		t.Fatal(err)
	}
	org1CA, empty := filepath.Join(dir, "org1-ca.pem"), filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(org1CA, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("nothing"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"channel", "add-org", "--org", "Org3"}, "want --org ORG and at least one --ca FILE"},
		{[]string{"channel", "add-org", "--org", "Org3", "--ca", org1CA}, `bad CA certificate in org definition: CA certificate "CN=ca.Org1,O=Org1" names organisations ["Org1"], expected "Org3"`},
		{[]string{"channel", "add-org", "--org", "Org3", "--ca", empty}, "--ca " + empty + ": no PEM CERTIFICATE block"},
		{[]string{"channel", "add-org", "--org", "Org1", "--ca", org1CA, "--peer", "peer0.Org1"}, `--peer "peer0.Org1": want NAME=HOST:PORT`},
		{[]string{"channel", "add-org", "--org", "Org1", "--ca", org1CA, "--peer", "peer0.Org1=127.0.0.1"}, `--peer: peers[0] (peer0.Org1): address "127.0.0.1"`},
		{[]string{"channel", "remove-org"}, "want --org ORG"},
		{[]string{"channel", "remove-org", "--org", "Org2", "--dir", "/nonexistent-strand-net"}, "no network in /nonexistent-strand-net"},
	} {
		if _, err := cli(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("strand %s: %v, want an error naming %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}
