package node_test

import (
	"crypto/tls"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// awaitPool waits up to 10 s until p's pool metrics satisfy holds.
func awaitPool(t *testing.T, p *node.Peer, what string, holds func(m gateway.PoolMetrics) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !holds(p.Pool.Metrics()); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pool of %s after 10 s: %s; want %s", p.Name, p.Pool.Metrics(), what)
		}
	}
}

// TestComputeNode runs a logical peer in this process, every part over
// mutual TLS on 127.0.0.1: a memory node, the primary peer and a compute
// node. The compute node joins; the primary's gateway then has it endorse
// (the primary, by default, does not); with the memory node gone an
// endorsement is refused with a 503 that names the state as unavailable
// and carries a retry hint; and the compute node's Close takes it out of
// the pool.
func TestComputeNode(t *testing.T) {
	lay, err := localnet.Generate(t.TempDir(), localnet.Spec{Orgs: 1, Memnodes: true, Compute: 1,
		Batch: node.BatchConfig{MaxTxs: 100, Timeout: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	mcfg, err := node.LoadMemnode(lay.Memnodes[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := node.StartMemnode(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	memClosed := false
	t.Cleanup(func() {
		if !memClosed {
			mem.Close()
		}
	})
	n := &network{layout: lay}
	if n.ch, err = node.LoadChannel(lay.Channel); err != nil {
		t.Fatal(err)
	}
	for _, nd := range lay.Nodes {
		cfg, err := node.LoadNode(nd.Config)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Metrics = ""
		if nd.Kind() == "orderer" {
			o, err := node.StartOrderer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { o.Close() })
			continue
		}
		p, err := node.StartPeer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		n.peers = append(n.peers, p)
	}
	primary := n.peers[0]
	ccfg, err := node.LoadCompute(lay.Computes[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	ccfg.Metrics = ""
	// Its built-in contracts are the ones its config gives (here
	// Smallbank, counted), as a peer's are.
	var invoked atomic.Int64
	builtins := map[string]func() contract.Contract{}
	for _, name := range node.DefaultBuiltins().Names() {
		builtins[name] = func() contract.Contract { c, _ := node.DefaultBuiltins().New(name); return c }
	}
	builtins[smallbank.Name] = func() contract.Contract { return countedContract{smallbank.New(), &invoked} }
	ccfg.Builtins = contract.NewBuiltins(builtins)
	c, err := node.StartCompute(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			c.Close()
		}
	})
	awaitPool(t, primary, "the compute node joined", func(m gateway.PoolMetrics) bool { return m.Joins == 1 && m.Members == 1 })

	// Only its primary may ask it to check signatures: a client of the
	// org is refused, as are another channel and an oversized request
	// (here asked by the primary's own TLS identity).
	cl, err := lay.Connect("Org1", "")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	asClient := cl.TLS.Clone()
	asClient.InsecureSkipVerify, asClient.VerifyConnection, asClient.ServerName = true, nil, "" // the server's identity is not under test
	callVerifier := func(conf *tls.Config, req *api.SignatureCheckRequest) error {
		cc, err := grpc.NewClient(c.Addr, grpc.WithTransportCredentials(credentials.NewTLS(conf)))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		_, err = api.NewVerifierClient(cc).CheckSignatures(t.Context(), req)
		return err
	}
	if err := callVerifier(asClient, &api.SignatureCheckRequest{Channel: n.ch.Channel, Txs: [][]byte{{1}}}); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "only its primary") {
		t.Fatalf("a client asking the compute node to check signatures: %v; want PermissionDenied naming the primary", err)
	}
	pcfg, err := node.LoadNode(lay.Nodes[slices.IndexFunc(lay.Nodes, func(nd localnet.Node) bool { return nd.Name == primary.Name })].Config)
	if err != nil {
		t.Fatal(err)
	}
	_, asPrimary, err := node.LoadTLS(pcfg, n.ch)
	if err != nil {
		t.Fatal(err)
	}
	asPrimary = asPrimary.Clone()
	asPrimary.InsecureSkipVerify, asPrimary.VerifyConnection, asPrimary.ServerName = true, nil, ""
	if err := callVerifier(asPrimary, &api.SignatureCheckRequest{Channel: "other", Txs: [][]byte{{1}}}); status.Code(err) != codes.NotFound {
		t.Fatalf("the primary asking for another channel: %v; want NotFound", err)
	}
	if err := callVerifier(asPrimary, &api.SignatureCheckRequest{Channel: n.ch.Channel, Txs: make([][]byte, 1025)}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("the primary asking for 1,025 transactions: %v; want InvalidArgument", err)
	}

	contract := n.connect(t, 0)
	for i := range 3 {
		if _, err := contract.Submit(t.Context(), "create_account", string(rune('a'+i)), "A", "10", "10"); err != nil {
			t.Fatal(err)
		}
	}
	if m := primary.Pool.Metrics(); m.Served[ccfg.Name] != 3 || m.Served[primary.Name] != 0 {
		t.Fatalf("pool after three transactions: %s; want all three endorsed by %s", m, ccfg.Name)
	}
	if e := c.Endorser.Metrics(); e.Endorsed != 3 {
		t.Fatalf("compute node's endorser: %s", e)
	}
	if n := invoked.Load(); n != 3 {
		t.Fatalf("the compute node's configured Smallbank ran %d times for 3 endorsements, want 3 (ComputeConfig.Builtins ignored?)", n)
	}
	// Stage 1 left the transactions' signatures to the compute node
	// (compute.verify: compute, the default), over its Verifier service.
	if m, cm := primary.Committer.Metrics(), c.Metrics(); m.Remotes != 1 || m.RemoteTxs != 3 || m.RemoteFailed != 0 || cm.SignatureChecks != 3 ||
		m.ByCode["VALID"] < 3 {
		t.Fatalf("after three transactions: the primary's committer had %d remotes check %d transactions (%d requests failed), codes %v; the compute node checked %d; want 1, 3, 0, 3 VALID and 3",
			m.Remotes, m.RemoteTxs, m.RemoteFailed, m.ByCode, cm.SignatureChecks)
	}

	// The memory node goes away: the compute node cannot read state.
	memClosed = true
	if err := mem.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = contract.Submit(t.Context(), "query", "a")
	var ee *client.EndorseError
	if !errors.As(err, &ee) || ee.Status != http.StatusServiceUnavailable || ee.RetryAfter == 0 || !strings.Contains(ee.Message, "state unavailable") ||
		!strings.Contains(ee.Message, "compute node "+ccfg.Name) {
		t.Fatalf("endorsing with the memory node down: %v; want a 503 with a retry hint naming the state unavailable on %s", err, ccfg.Name)
	}
	if mem, err = node.StartMemnode(mcfg); err != nil { // the primary's committer waits for it
		t.Fatal(err)
	}
	memClosed = false

	closed = true
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	awaitPool(t, primary, "the compute node left", func(m gateway.PoolMetrics) bool { return m.Leaves == 1 })
	for deadline := time.Now().Add(10 * time.Second); primary.Committer.Metrics().Remotes != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the compute node left, the primary's committer still asks %d remotes", primary.Committer.Metrics().Remotes)
		}
	}
	if _, err := contract.Submit(t.Context(), "create_account", "z", "Z", "10", "10"); err != nil {
		t.Fatalf("with the compute node gone: %v", err)
	}
	if got := primary.Pool.Members(); len(got) != 1 || got[0] != primary.Name {
		t.Fatalf("pool members after the compute node closed: %v; want the primary alone", got)
	}
}

// countedContract counts the invocations of the contract it wraps.
type countedContract struct {
	contract.Contract
	n *atomic.Int64
}

func (c countedContract) Invoke(stub contract.Stub) ([]byte, error) {
	c.n.Add(1)
	return c.Contract.Invoke(stub)
}
