package main

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
)

// TestNetUpEd25519 starts a network of real processes with Ed25519
// identities (net up --alg ed25519): a client's transaction, signed with
// its Ed25519 key and endorsed and ordered under Ed25519 keys, commits
// VALID, and demo --net's load commits and its bound is Ed25519's. An
// unknown --alg is refused before anything is written.
func TestNetUpEd25519(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network of processes")
	}
	dir := filepath.Join(t.TempDir(), "net")
	t.Cleanup(func() { cli(t, "net", "down", "--dir", dir) })
	mustCLI(t, "net", "up", "--dir", dir, "--orderers", "1", "--alg", "ed25519", "--batch-timeout", "10ms")
	lay, err := localnet.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := lay.Clients[0]
	if _, ok := pemCert(t, c.Cert).PublicKey.(ed25519.PublicKey); !ok {
		t.Fatalf("client %s's signing certificate has a %T key, want Ed25519", c.Name, pemCert(t, c.Cert).PublicKey)
	}
	out := mustCLI(t, "invoke", "--dir", dir, "--org", "Org1", "create_account", "e1", "E1", "10", "10")
	if !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke on an Ed25519 network:\n%s", out)
	}
	// demo --net loads it through every client and measures its bound
	// with the network's algorithm.
	demo := mustCLI(t, "demo", "--net", dir, "--duration", "1s", "--accounts", "20", "--clients", "2")
	for _, want := range []string{"Smallbank invariant holds", "Ed25519 identities: the bound checks every signature alone"} {
		if !strings.Contains(demo, want) {
			t.Errorf("demo --net on an Ed25519 network lacks %q:\n%s", want, demo)
		}
	}

	bad := filepath.Join(t.TempDir(), "net")
	if _, err := cli(t, "net", "up", "--dir", bad, "--alg", "rsa"); !errors.Is(err, identity.ErrUnknownAlgorithm) || !strings.Contains(err.Error(), `--alg: identity: unknown algorithm "rsa"`) {
		t.Errorf("net up --alg rsa: %v, want identity.ErrUnknownAlgorithm naming the flag and the value", err)
	}
	if _, err := os.Stat(bad); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("net up --alg rsa left %s behind (%v)", bad, err)
	}
}

func pemCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(raw)
	if b == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cert
}
