package localnet

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/node"
)

// TestGenerateHosts places nodes on named hosts: their addresses, their
// TLS certificates' names, a memory node following its peer, and the data
// root.
func TestGenerateHosts(t *testing.T) {
	dir := t.TempDir()
	lay, err := Generate(dir, Spec{Orderers: 1, Memnodes: true, BasePort: 17050, DataRoot: "/var/lib/strand",
		Hosts: map[string]string{"peer0.Org1": "peer1.example.com", "orderer0": "10.1.2.3"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"orderer0": "10.1.2.3:", "peer0.Org1": "peer1.example.com:", "peer0.Org2": "127.0.0.1:",
		"memnode.peer0.Org1": "peer1.example.com:", "memnode.peer0.Org2": "127.0.0.1:"}
	for _, n := range append(slices.Clone(lay.Nodes), lay.Memnodes...) {
		if !strings.HasPrefix(n.Address, want[n.Name]) || !strings.HasPrefix(n.Metrics, want[n.Name]) {
			t.Errorf("%s at %s, metrics %s: want host %s", n.Name, n.Address, n.Metrics, want[n.Name])
		}
	}
	c, err := node.LoadNode(filepath.Join(dir, "nodes", "peer0.Org1.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "/var/lib/strand/peer0.Org1" || !strings.HasPrefix(c.Listen, "peer1.example.com:") ||
		!strings.HasPrefix(c.StateDB.Memnode.Address, "peer1.example.com:") {
		t.Errorf("peer0.Org1 node file: dataDir %s, listen %s, memnode %s", c.DataDir, c.Listen, c.StateDB.Memnode.Address)
	}
	for file, host := range map[string]string{"Org1/peer0/tls-cert.pem": "peer1.example.com", "Org1/peer0/memnode/tls-cert.pem": "peer1.example.com"} {
		cert := readCert(t, filepath.Join(dir, "crypto", file))
		if err := cert.VerifyHostname(host); err != nil {
			t.Errorf("%s: %v", file, err)
		}
		if err := cert.VerifyHostname("127.0.0.1"); err != nil {
			t.Errorf("%s lost 127.0.0.1: %v", file, err)
		}
	}
	if err := readCert(t, filepath.Join(dir, "crypto", "OrdererOrg", "orderer0", "tls-cert.pem")).VerifyHostname("10.1.2.3"); err != nil {
		t.Error(err)
	}
	if err := readCert(t, filepath.Join(dir, "crypto", "Org2", "peer0", "tls-cert.pem")).VerifyHostname("peer1.example.com"); err == nil {
		t.Error("peer0.Org2's certificate names peer0.Org1's host")
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(raw)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestGenerateHostsRefused(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{BasePort: 17050, Hosts: map[string]string{"peer7.Org1": "a.example"}}, `node "peer7.Org1", which this network does not have; its nodes: orderer0, peer0.Org1, peer0.Org2`},
		{Spec{BasePort: 17050, Hosts: map[string]string{"peer0.Org1": "a.example:7051"}}, `host "a.example:7051" of node peer0.Org1: ':' is not allowed`},
		{Spec{BasePort: 17050, Hosts: map[string]string{"peer0.Org1": "-a.example"}}, `dot-separated labels`},
		{Spec{Hosts: map[string]string{"peer0.Org1": "a.example"}}, `give a base port too`},
		{Spec{BasePort: 17050, Hosts: map[string]string{"memnode.peer0.Org1": "a.example"}}, `node "memnode.peer0.Org1", which this network does not have`},
		{Spec{DataRoot: "var/lib"}, `data root "var/lib": want an absolute directory`},
	} {
		_, err := Generate(t.TempDir(), tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.spec, err, tc.want)
		}
	}
}

// TestBundle extracts a node's bundle into a new directory, where its node
// file loads as it is, and checks that no key but the node's own is in it.
func TestBundle(t *testing.T) {
	dir := t.TempDir()
	if _, err := Generate(dir, Spec{Orderers: 1, Memnodes: true, PeersPerOrg: 2}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		keys []string // the only private keys the bundle may hold
		load func(string) error
	}{
		{"peer1.Org1", []string{"crypto/Org1/peer1/key.pem", "crypto/Org1/peer1/tls-key.pem"}, func(p string) error { _, err := node.LoadNode(p); return err }},
		{"orderer0", []string{"crypto/OrdererOrg/orderer0/key.pem", "crypto/OrdererOrg/orderer0/tls-key.pem"}, func(p string) error { _, err := node.LoadNode(p); return err }},
		{"memnode.peer0.Org2", []string{"crypto/Org2/peer0/memnode/tls-key.pem"}, func(p string) error { _, err := node.LoadMemnode(p); return err }},
	} {
		var buf bytes.Buffer
		if err := Bundle(dir, tc.name, &buf); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		out := t.TempDir()
		var keys []string
		for name, mode := range untar(t, &buf, out) {
			if strings.HasSuffix(name, "key.pem") {
				keys = append(keys, name)
				if mode != 0o600 {
					t.Errorf("%s: %s has mode %o, want 600", tc.name, name, mode)
				}
			}
		}
		slices.Sort(keys)
		if !slices.Equal(keys, tc.keys) {
			t.Errorf("%s: bundle holds keys %v, want only %v", tc.name, keys, tc.keys)
		}
		if err := tc.load(filepath.Join(out, "nodes", tc.name+".yaml")); err != nil {
			t.Errorf("%s: its node file does not load from the extracted bundle: %v", tc.name, err)
		}
	}
	err := Bundle(dir, "peer9.Org1", io.Discard)
	if err == nil || !strings.Contains(err.Error(), `has no node "peer9.Org1"; its nodes: orderer0, peer0.Org1`) {
		t.Errorf("unknown node: %v", err)
	}
}

// TestBundleRefusesOutsideFiles: a node file edited to name a file outside
// the network directory (or a CA key) is refused, not bundled.
func TestBundleRefusesOutsideFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := Generate(dir, Spec{Orderers: 1}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nodes", "peer0.Org1.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ replace, want string }{
		{"../crypto/Org1/peer0/cert.pem", "a bundle never holds one"},
		{filepath.Join(t.TempDir(), "cert.pem"), "outside the network directory"},
	} {
		target := "../crypto/Org1/ca-key.pem"
		if tc.want != "a bundle never holds one" {
			target = tc.replace
			src, err := os.ReadFile(filepath.Join(dir, "crypto", "Org1", "peer0", "cert.pem"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(target, src, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		edited := strings.Replace(string(raw), "../crypto/Org1/peer0/cert.pem", target, 1)
		if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Bundle(dir, "peer0.Org1", io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("node file naming %s: %v, want %q", target, err, tc.want)
		}
	}
}

// untar extracts a bundle into dir and returns its files' modes.
func untar(t *testing.T, r io.Reader, dir string) map[string]os.FileMode {
	t.Helper()
	zr, err := gzip.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	modes := map[string]os.FileMode{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return modes
		}
		if err != nil {
			t.Fatal(err)
		}
		if !filepath.IsLocal(h.Name) {
			t.Fatalf("bundle entry %q is not a local path", h.Name)
		}
		p := filepath.Join(dir, h.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, os.FileMode(h.Mode)); err != nil {
			t.Fatal(err)
		}
		modes[h.Name] = os.FileMode(h.Mode)
	}
}
