package localnet

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

func TestGenerateLoadsBack(t *testing.T) {
	dir := t.TempDir()
	lay, err := Generate(dir, Spec{Orgs: 2, PeersPerOrg: 2, Orderers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(lay.Nodes) != 7 || len(lay.Clients) != 2 {
		t.Fatalf("layout has %d nodes and %d clients, want 7 and 2", len(lay.Nodes), len(lay.Clients))
	}
	ch, err := node.LoadChannel(lay.Channel)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Contracts) != 4 || len(ch.Orderers()) != 3 || len(ch.PeersOf("Org2")) != 2 {
		t.Fatalf("channel: %d contracts, %d orderers, %d peers of Org2; want 4, 3, 2", len(ch.Contracts), len(ch.Orderers()), len(ch.PeersOf("Org2")))
	}
	if got := ch.Policies()["smallbank"].String(); got != "AND('Org1.peer','Org2.peer')" {
		t.Errorf("smallbank policy %s", got)
	}
	reg, err := ch.Registry()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Committer(); err != nil {
		t.Fatal(err)
	}
	addrs := map[string]bool{}
	for _, ln := range lay.Nodes {
		if addrs[ln.Address] {
			t.Errorf("address %s used twice", ln.Address)
		}
		addrs[ln.Address] = true
		n, err := node.LoadNode(ln.Config)
		if err != nil {
			t.Fatal(err)
		}
		if n.Name != ln.Name || n.Org != ln.Org || n.Role != ln.Role.String() || n.Listen != ln.Address {
			t.Errorf("node file %s: %+v does not match layout %+v", ln.Config, n, ln)
		}
		if n.Channel != lay.Channel {
			t.Errorf("node %s: channel %s, want %s", ln.Name, n.Channel, lay.Channel)
		}
		if err := n.CheckChannel(ch); err != nil {
			t.Error(err)
		}
		s, err := n.Signer()
		if err != nil {
			t.Fatal(err)
		}
		checkMember(t, reg, s.Identity().Org, s.Identity().Cert, ln.Role)
		checkMember(t, reg, ln.Org, certDER(t, n.TLS.Cert), ln.Role)
		if _, _, err := node.LoadTLS(n, ch); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{n.Identity.Key, n.TLS.Key} {
			if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("key %s: mode %v (%v), want 0600", key, fi.Mode().Perm(), err)
			}
		}
	}
	for _, c := range lay.Clients {
		checkMember(t, reg, c.Org, certDER(t, c.Cert), identity.RoleClient)
		checkMember(t, reg, c.Org, certDER(t, c.TLSCert), identity.RoleClient)
		cert, _ := os.ReadFile(c.Cert)
		key, _ := os.ReadFile(c.Key)
		if _, err := identity.LoadSigner(c.Org, cert, key); err != nil {
			t.Errorf("client %s: %v", c.Name, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "crypto", "Org1", "ca-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("CA key: %v %v, want mode 0600", fi, err)
	}
}

func checkMember(t *testing.T, reg *identity.Registry, org string, der []byte, role identity.Role) {
	t.Helper()
	m, err := reg.Member(&api.Identity{Org: org, Cert: der})
	if err != nil {
		t.Fatal(err)
	}
	if m.Role != role {
		t.Errorf("member %s of %s has role %s, want %s", m.Name, org, m.Role, role)
	}
}

func certDER(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return blk.Bytes
}

func TestGenerateDefaultsAndBasePort(t *testing.T) {
	lay, err := Generate(filepath.Join(t.TempDir(), "net"), Spec{BasePort: 17050})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"orderer0 127.0.0.1:17050", "peer0.Org1 127.0.0.1:17051", "peer0.Org2 127.0.0.1:17052"}
	if len(lay.Nodes) != len(want) {
		t.Fatalf("%d nodes, want %d", len(lay.Nodes), len(want))
	}
	for i, n := range lay.Nodes {
		if got := n.Name + " " + n.Address; got != want[i] {
			t.Errorf("node %d: %s, want %s", i, got, want[i])
		}
	}
}

func TestGenerateRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Generate(dir, Spec{})
	if !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("err %v, want ErrNotEmpty", err)
	}
	t.Log(err)
	if _, err := Generate(t.TempDir(), Spec{Orgs: -1}); err == nil {
		t.Error("Spec.Orgs -1 accepted")
	}
}
