package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/contract/external/externaltest"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/contract/wasm/wasmtest"
	"github.com/strand-ledger/strand/contracts/kv"
	sdk "github.com/strand-ledger/strand/sdk/go/external"
)

// TestNetContractDeploy runs a 2-org network of real processes and the
// contract lifecycle through the CLI: a module that does not compile and
// a deploy signed by one org's admin of two are refused by name, and the
// contract stays undefined; a deploy signed by both admins puts a
// WebAssembly contract (examples/kv-c) in force on both peers, which
// answer invokes through either org; an upgrade with a stricter policy,
// to a module larger than one transaction, keeps its state; a downgrade
// is refused by name; --fuel sets a call's budget and --fuel 0 gives the
// peers' default back. An external contract
// (the built-in kv served by the Go SDK in this process, pinned by its
// CA) is deployed and answers both orgs' peers, which dial it with their
// own TLS certificates.
func TestNetContractDeploy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network of processes")
	}
	code := wasmtest.C(t, "examples/kv-c/kv.c")
	mod := filepath.Join(t.TempDir(), "kv.wasm")
	junk := filepath.Join(t.TempDir(), "junk.wasm")
	if err := os.WriteFile(mod, code, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, []byte("\x00asm junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The upgrade carries a module larger than one transaction, as a Go
	// module is (4.6 MB for a few lines): it travels compressed.
	large := filepath.Join(t.TempDir(), "kv-large.wasm")
	largeCode := withCustomSection(code, "padding", []byte(strings.Repeat("a compressible section ", 5<<20/23)))
	if len(largeCode) <= lifecycle.MaxCodeBytes {
		t.Fatalf("the large module has %d bytes, want more than a transaction carries (%d)", len(largeCode), lifecycle.MaxCodeBytes)
	}
	if err := os.WriteFile(large, largeCode, 0o644); err != nil {
		t.Fatal(err)
	}
	dir, _ := generateTwoPolicyNet(t)
	mustCLI(t, "net", "up", "--dir", dir)

	if out := mustCLI(t, "contract", "package", mod); !strings.Contains(out, lifecycle.CodeHash(code)) {
		t.Errorf("contract package printed %q, want the module's hash", out)
	}
	if _, err := cli(t, "contract", "deploy", "kvw", "--dir", dir, "--wasm", junk); err == nil || !strings.Contains(err.Error(), "does not compile") {
		t.Errorf("deploy of a module that does not compile: %v, want it named", err)
	}
	_, err := cli(t, "contract", "deploy", "kvw", "--dir", dir, "--wasm", mod, "--sign-as", "Org1")
	if err == nil || !strings.Contains(err.Error(), "ENDORSEMENT_POLICY_FAILURE") || !strings.Contains(err.Error(), "not approved") {
		t.Fatalf("deploy signed by one admin of two: %v, want ENDORSEMENT_POLICY_FAILURE, not approved", err)
	}
	if out := mustCLI(t, "contract", "list", "--dir", dir); strings.Contains(out, "kvw") || !strings.Contains(out, "smallbank") {
		t.Fatalf("contract list after a refused deploy:\n%s", out)
	}
	if _, err := cli(t, "invoke", "--dir", dir, "--contract", "kvw", "put", "k", "v"); err == nil {
		t.Fatalf("invoke of an undefined contract succeeded")
	}

	start := time.Now()
	out := mustCLI(t, "contract", "deploy", "kvw", "--dir", dir, "--wasm", mod, "--policy", "OR('Org1.peer','Org2.peer')")
	if !strings.Contains(out, "sequence 1 (wasm") || !strings.Contains(out, "in force on every peer") {
		t.Fatalf("deploy printed %q", out)
	}
	out = mustCLI(t, "invoke", "--dir", dir, "--contract", "kvw", "put", "k1", "v1")
	t.Logf("deploy to first committed invoke: %s", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke after deploy:\n%s", out)
	}
	if out := queryCommitted(t, "v1", "query", "--dir", dir, "--org", "Org2", "--contract", "kvw", "get", "k1"); !strings.Contains(out, "v1") {
		t.Fatalf("query on Org2's peer after deploy: %q", out)
	}
	if _, err := cli(t, "contract", "deploy", "kvw", "--dir", dir, "--wasm", mod); err == nil || !strings.Contains(err.Error(), "upgrade it instead") {
		t.Errorf("deploy of a defined contract: %v, want upgrade suggested", err)
	}

	out = mustCLI(t, "contract", "upgrade", "kvw", "--dir", dir, "--wasm", large, "--version", "2.0", "--policy", "AND('Org1.peer','Org2.peer')")
	if !strings.Contains(out, "version 2.0 sequence 2") || !strings.Contains(out, lifecycle.CodeHash(largeCode)[:16]) {
		t.Fatalf("upgrade printed %q", out)
	}
	if out := mustCLI(t, "query", "--dir", dir, "--contract", "kvw", "get", "k1"); !strings.Contains(out, "v1") {
		t.Fatalf("state after the upgrade: get k1 = %q, want v1", out)
	}
	if out := mustCLI(t, "invoke", "--dir", dir, "--org", "Org2", "--contract", "kvw", "put", "k2", "v2"); !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke after the upgrade:\n%s", out)
	}
	show := mustCLI(t, "contract", "show", "kvw", "--dir", dir, "--org", "Org2")
	if !strings.Contains(show, `"sequence":2`) || !strings.Contains(show, `AND('Org1.peer','Org2.peer')`) {
		t.Errorf("contract show after the upgrade: %s", show)
	}
	_, err = cli(t, "contract", "upgrade", "kvw", "--dir", dir, "--wasm", mod, "--sequence", "1")
	if err == nil || !strings.Contains(err.Error(), "CHAINCODE_VERSION_CONFLICT") {
		t.Errorf("downgrade to sequence 1: %v, want CHAINCODE_VERSION_CONFLICT", err)
	}
	if out := mustCLI(t, "invoke", "--dir", dir, "--contract", "kvw", "put", "k3", "v3"); !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke after the refused downgrade:\n%s", out)
	}

	// --fuel sets a call's budget; --fuel 0 on an upgrade gives it back
	// the peers' default (without --fuel an upgrade keeps the current).
	mustCLI(t, "contract", "upgrade", "kvw", "--dir", dir, "--wasm", mod, "--fuel", "10")
	if _, err := cli(t, "invoke", "--dir", dir, "--contract", "kvw", "put", "k4", "v4"); err == nil || !strings.Contains(err.Error(), "ran out of fuel") {
		t.Fatalf("invoke with a budget of 10 units: %v, want ran out of fuel", err)
	}
	mustCLI(t, "contract", "upgrade", "kvw", "--dir", dir, "--wasm", mod)
	if show := mustCLI(t, "contract", "show", "kvw", "--dir", dir); !strings.Contains(show, `"fuel":10`) {
		t.Fatalf("contract show after an upgrade without --fuel: %s, want the budget kept", show)
	}
	mustCLI(t, "contract", "upgrade", "kvw", "--dir", dir, "--wasm", mod, "--fuel", "0")
	if show := mustCLI(t, "contract", "show", "kvw", "--dir", dir); strings.Contains(show, `"fuel"`) {
		t.Fatalf("contract show after --fuel 0: %s, want no budget of its own", show)
	}
	if out := mustCLI(t, "invoke", "--dir", dir, "--contract", "kvw", "put", "k4", "v4"); !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke after --fuel 0:\n%s", out)
	}

	pki := externaltest.NewPKI(t)
	srvTLS, err := sdk.ServerTLS(pki.ServerCert, pki.ServerKey, filepath.Join(dir, "crypto", "Org1", "ca.pem"), filepath.Join(dir, "crypto", "Org2", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go sdk.Serve(lis, kv.New(), srvTLS)
	defer lis.Close()
	out = mustCLI(t, "contract", "deploy", "kvx", "--dir", dir, "--external", lis.Addr().String(), "--external-ca", pki.CACert, "--policy", "AND('Org1.peer','Org2.peer')")
	if !strings.Contains(out, "sequence 1 (external") {
		t.Fatalf("deploy --external printed %q", out)
	}
	if out := mustCLI(t, "invoke", "--dir", dir, "--contract", "kvx", "insert", "x1", "v1"); !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke of the external contract:\n%s", out)
	}
	if out := queryCommitted(t, "v1", "query", "--dir", dir, "--org", "Org2", "--contract", "kvx", "read", "x1"); !strings.Contains(out, "v1") {
		t.Fatalf("query of the external contract on Org2's peer: %q", out)
	}
}

// queryCommitted runs a query until its answer has want, at most 100
// times 20 ms apart, and returns the last answer: an invoke returns when
// the peer it submitted through committed the block, and another org's
// peer may commit it a moment later (the query then fails, "key does not
// exist", as TestNetContractDeploy did about once in four runs).
func queryCommitted(t *testing.T, want string, args ...string) string {
	t.Helper()
	var out string
	for range 100 {
		var err error
		if out, err = cli(t, args...); err == nil && strings.Contains(out, want) {
			break
		} else if err != nil {
			out = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return out
}

// withCustomSection returns module with a custom section (id 0) of the
// given name and payload appended: still a valid module, which the
// runtime ignores, and whose hash differs.
func withCustomSection(module []byte, name string, payload []byte) []byte {
	uleb := func(b []byte, v int) []byte {
		for {
			c := byte(v & 0x7f)
			if v >>= 7; v != 0 {
				c |= 0x80
			}
			b = append(b, c)
			if v == 0 {
				return b
			}
		}
	}
	body := append(uleb(nil, len(name)), name...)
	body = append(body, payload...)
	out := append(append([]byte{}, module...), 0)
	out = uleb(out, len(body))
	return append(out, body...)
}
