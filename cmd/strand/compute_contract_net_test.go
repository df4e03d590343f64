package main

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contract/external/externaltest"
	"github.com/strand-ledger/strand/contract/wasm/wasmtest"
	"github.com/strand-ledger/strand/contracts/kv"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
	sdk "github.com/strand-ledger/strand/sdk/go/external"
)

// TestNetComputeContracts runs a 2-org network of real processes whose
// peers are logical peers (a memory node and a compute node each; the
// primary endorses only when no compute node answers) and the contract
// lifecycle through the CLI. A WebAssembly contract deployed with an
// AND policy is endorsed by peer0.Org1's compute node once it has
// installed the definition from the memory node, and agrees with
// peer0.Org2's endorsement; an upgrade to other code (Smallbank in C)
// with an init function is served by the compute node, which also
// refuses a second init (init-first holds there); a compute node
// started after the upgrade runs it from its start; an external
// contract is served through the compute nodes, which dial it with
// their own certificates. Every answer the primary's pool took from a
// compute node named the primary's definition; those that did not were
// counted stale and endorsed elsewhere.
func TestNetComputeContracts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network of processes")
	}
	modules := map[string][]byte{
		"kv.wasm": wasmtest.C(t, "examples/kv-c/kv.c"),
		"sb.wasm": wasmtest.C(t, "examples/smallbank-c/smallbank.c"),
	}
	tmp := t.TempDir()
	for name, code := range modules {
		if err := os.WriteFile(filepath.Join(tmp, name), code, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(tmp, "net")
	lay, err := localnet.Generate(dir, localnet.Spec{Orgs: 2, Memnodes: true, Compute: 1,
		Batch: node.BatchConfig{MaxTxs: 100, Timeout: 10 * time.Millisecond},
		Contracts: []localnet.ContractSpec{
			{Name: "smallbank", Policy: "AND('Org1.peer','Org2.peer')"},
			{Name: "kv", Policy: "OR('Org1.peer','Org2.peer')"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli(t, "net", "down", "--dir", dir) })
	mustCLI(t, "net", "up", "--dir", dir)
	const primary, compute0, compute1 = "peer0.Org1", "compute0.peer0.Org1", "compute1.peer0.Org1"
	pn, _ := lay.Node(primary)
	c0 := computeNode(t, lay, compute0)
	awaitGauge(t, pn.Metrics, "strand_pool_members", "the compute node in the pool", func(v float64) bool { return v == 1 })
	conn := netConnect(t, lay, "Org1", "")
	ctx := t.Context()

	// Deploy: the compute node installs the definition from the memory
	// node, then endorses every proposal (the primary is its fallback).
	mustCLI(t, "contract", "deploy", "kvw", "--dir", dir, "--wasm", filepath.Join(tmp, "kv.wasm"), "--policy", "AND('Org1.peer','Org2.peer')")
	awaitGauge(t, c0.Metrics, "strand_compute_definition_installs_total", "the deploy installed", func(v float64) bool { return v >= 1 })
	served, retried := poolServed(t, pn.Metrics)
	endorsed := scrapeValue(t, c0.Metrics, "strand_endorser_endorsed_total")
	kvw := conn.Contract("kvw")
	const invokes = 20
	for i := range invokes {
		if _, err := kvw.Submit(ctx, "put", "k"+strconv.Itoa(i), "v"+strconv.Itoa(i)); err != nil {
			t.Fatalf("put %d after the deploy: %v", i, err)
		}
	}
	if after, again := poolServed(t, pn.Metrics); after[compute0]-served[compute0] != invokes+again-retried {
		t.Fatalf("%s served %v of %d invokes of the deployed contract (%v endorsements asked again); want all", compute0, after[compute0]-served[compute0], invokes, again-retried)
	}
	if got := scrapeValue(t, c0.Metrics, "strand_endorser_endorsed_total") - endorsed; got < invokes {
		t.Fatalf("%s's endorser endorsed %v proposals during %d invokes; want them all", compute0, got, invokes)
	}

	// Upgrade to other code with an init function: the CLI invokes init
	// at once (the pool takes the primary's answer if the compute node
	// has not installed sequence 2 yet); then the compute node serves
	// the new code and refuses init a second time.
	out := mustCLI(t, "contract", "upgrade", "kvw", "--dir", dir, "--wasm", filepath.Join(tmp, "sb.wasm"), "--version", "2.0",
		"--init", "create_account", "--init-arg", "a1", "--init-arg", "A1", "--init-arg", "100", "--init-arg", "100")
	if !strings.Contains(out, "version 2.0 sequence 2") || !strings.Contains(out, "init    VALID") {
		t.Fatalf("upgrade printed %q, want the init's commit and time", out)
	}
	awaitGauge(t, c0.Metrics, "strand_compute_definition_installs_total", "the upgrade installed", func(v float64) bool { return v >= 2 })
	served, retried = poolServed(t, pn.Metrics)
	for i := range 5 {
		if _, err := kvw.Submit(ctx, "deposit_checking", "a1", "10"); err != nil {
			t.Fatalf("deposit %d after the upgrade: %v", i, err)
		}
	}
	if after, again := poolServed(t, pn.Metrics); after[compute0]-served[compute0] != 5+again-retried {
		t.Fatalf("%s served %v of 5 invokes of the upgraded contract (%v endorsements asked again); want all", compute0, after[compute0]-served[compute0], again-retried)
	}
	_, err = kvw.Submit(ctx, "create_account", "a2", "A2", "1", "1")
	var ee *client.EndorseError
	if !errors.As(err, &ee) || ee.Status != http.StatusConflict || !strings.Contains(ee.Message, "already ran") || !strings.Contains(ee.Message, "compute node "+compute0) {
		t.Fatalf("init a second time: %v; want a 409 from %s naming the init as run", err, compute0)
	}
	res, err := kvw.Evaluate(ctx, "query", "a1")
	if err != nil || !strings.Contains(string(res), "150") {
		t.Fatalf("query a1 after the upgrade: %q %v; want checking 150", res, err)
	}

	// A compute node started after the upgrade runs it from its start.
	mustCLI(t, "net", "scale", "--dir", dir, "--compute", "Org1=2")
	lay = mustLoad(t, dir)
	c1 := computeNode(t, lay, compute1)
	awaitGauge(t, pn.Metrics, "strand_pool_members", "compute1 in the pool", func(v float64) bool { return v == 2 })
	served, retried = poolServed(t, pn.Metrics)
	for i := range 10 {
		if _, err := kvw.Submit(ctx, "deposit_checking", "a1", "1"); err != nil {
			t.Fatalf("deposit %d with two compute nodes: %v", i, err)
		}
	}
	after, again := poolServed(t, pn.Metrics)
	if after[compute1]-served[compute1] == 0 || after[compute0]+after[compute1]-served[compute0]-served[compute1] != 10+again-retried {
		t.Fatalf("served %v then %v (%v endorsements asked again); want the 10 deposits endorsed by the compute nodes, compute1 among them", served, after, again-retried)
	}
	if stale := scrapeLabelled(t, pn.Metrics, "strand_pool_stale_by_total"); stale[compute1] != 0 {
		t.Fatalf("stale answers %v; want none from %s, which read sequence 2 at start", stale, compute1)
	}

	// An external contract, served through the compute nodes.
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
	mustCLI(t, "contract", "deploy", "kvx", "--dir", dir, "--external", lis.Addr().String(), "--external-ca", pki.CACert, "--policy", "AND('Org1.peer','Org2.peer')")
	awaitGauge(t, c0.Metrics, "strand_compute_definition_installs_total", "the external deploy installed", func(v float64) bool { return v >= 3 })
	awaitGauge(t, c1.Metrics, "strand_compute_definition_installs_total", "the external deploy installed", func(v float64) bool { return v >= 1 })
	served, retried = poolServed(t, pn.Metrics)
	kvx := conn.Contract("kvx")
	for i := range 6 {
		if _, err := kvx.Submit(ctx, "insert", "x"+strconv.Itoa(i), "v"); err != nil {
			t.Fatalf("insert %d into the external contract: %v", i, err)
		}
	}
	after, again = poolServed(t, pn.Metrics)
	if got := after[compute0] + after[compute1] - served[compute0] - served[compute1]; got != 6+again-retried {
		t.Fatalf("served %v then %v (%v endorsements asked again); want the 6 external invokes endorsed by the compute nodes", served, after, again-retried)
	}
	if got := scrapeValue(t, c1.Metrics, "strand_external_calls_total"); got == 0 {
		t.Errorf("%s made no external call", compute1)
	}
	t.Logf("pool of %s: served %v, stale %v", primary, after, scrapeLabelled(t, pn.Metrics, "strand_pool_stale_by_total"))
}

// poolServed reads, at a primary's metrics endpoint, the proposals each
// member of its pool answered and the endorsements its gateway asked
// again. A gateway asks the pool again when the orgs' answers disagree,
// as they do when the other org's peer has not yet committed the previous
// transaction the client saw commit on this org's peer; so n submits are
// served n times plus once per endorsement asked again.
func poolServed(t *testing.T, addr string) (served map[string]float64, retried float64) {
	t.Helper()
	const name = "strand_gateway_endorse_retried_total"
	v, ok := scrapeGauges(addr, name)[name]
	if !ok {
		t.Fatalf("%s lacks %s", addr, name)
	}
	retried, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s at %s: %v", name, addr, err)
	}
	return scrapeLabelled(t, addr, "strand_pool_served_total"), retried
}

// computeNode returns compute node name of lay.
func computeNode(t *testing.T, lay *localnet.Layout, name string) localnet.Node {
	t.Helper()
	for _, c := range lay.Computes {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no compute node %s in the layout", name)
	return localnet.Node{}
}

// scrapeValue returns the value of the unlabelled metric name at addr; 0
// if it is not there.
func scrapeValue(t *testing.T, addr, name string) float64 {
	t.Helper()
	v, _ := strconv.ParseFloat(scrapeGauges(addr, name)[name], 64)
	return v
}

// awaitGauge waits up to 20 s until the unlabelled metric name at addr
// holds.
func awaitGauge(t *testing.T, addr, name, what string, holds func(float64) bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if holds(scrapeValue(t, addr, name)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s at %s after 20 s: %v; want %s", name, addr, scrapeGauges(addr, name), what)
		}
	}
}
