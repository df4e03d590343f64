package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/policy"
)

// gatedServer serves a real endorser whose calls wait, while gate is
// set, until the gate's channel is closed: a compute node that is busy.
type gatedServer struct {
	api.UnimplementedEndorserServer
	e       *endorser.Endorser
	gate    chan struct{}
	entered chan struct{}
}

func (s *gatedServer) ProcessProposal(ctx context.Context, sp *api.SignedProposal) (*api.ProposalResponse, error) {
	if s.gate != nil {
		s.entered <- struct{}{}
		<-s.gate
	}
	return s.e.ProcessProposal(ctx, sp), nil
}

// computeNode is an endorser of Org1 with an identity of its own, over
// Org1's peer's state (the memory tier the logical peer shares), served
// on 127.0.0.1.
type computeNode struct {
	name string
	srv  *grpc.Server
	gs   *gatedServer
	c    api.EndorserClient
}

func startCompute(t *testing.T, n *testnet.Network, name string, gated bool) *computeNode {
	t.Helper()
	p := n.Peers[0]
	e, err := endorser.New(endorser.Config{Channel: testnet.Channel, Registry: n.Registry,
		Signer:    n.Issue(t, "Org1", name, identity.RolePeer),
		Contracts: map[string]contract.Contract{smallbank.Name: smallbank.New()},
		State:     p.State, Seen: func(string) (bool, error) { return false, nil }, Height: p.Committer.Height})
	if err != nil {
		t.Fatal(err)
	}
	gs := &gatedServer{e: e}
	if gated {
		gs.gate, gs.entered = make(chan struct{}), make(chan struct{}, 16)
	}
	cn := &computeNode{name: name, gs: gs}
	addr := serve(t, func(s *grpc.Server) { cn.srv = s; api.RegisterEndorserServer(s, gs) })
	cn.c = gateway.NamedEndorser(name, api.NewEndorserClient(dial(t, addr)))
	return cn
}

// poolGateway is Org1's gateway over pool.
func poolGateway(t *testing.T, n *testnet.Network, pool *gateway.Pool) *gateway.Gateway {
	t.Helper()
	p := n.Peers[0]
	gw, err := gateway.New(gateway.Config{Channel: testnet.Channel, LocalOrg: "Org1", Peer: "peer0.Org1", Local: p.Endorser, Pool: pool,
		Remote:   map[string][]api.EndorserClient{"Org2": {api.NewEndorserClient(dial(t, n.Peers[1].Addr))}},
		Policies: map[string]*policy.Policy{smallbank.Name: policy.MustParse("AND('Org1.peer','Org2.peer')")},
		Orderers: []api.OrdererClient{api.NewOrdererClient(dial(t, n.OrdererAddr))}, Ledger: gateway.PeerLedger(p.Store, p.Committer),
		Blocks: p.Store, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

func endorseOK(t *testing.T, gw *gateway.Gateway, sp *api.SignedProposal) {
	t.Helper()
	r, err := gw.Endorse(t.Context(), sp)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("Endorse: %v %d %s", err, r.GetStatus(), r.GetMessage())
	}
}

// TestPoolLeastLoaded: with nothing in flight the members take turns;
// while one compute node holds a proposal, the next ones go to the other;
// with compute nodes present the primary (PrimaryFallback) endorses
// nothing.
func TestPoolLeastLoaded(t *testing.T) {
	n := testnet.Start(t, testnet.Options{})
	user := n.Issue(t, "Org1", "user", identity.RoleClient)
	c0, c1 := startCompute(t, n, "compute0", true), startCompute(t, n, "compute1", false)
	pool := gateway.NewPool("peer0.Org1", gateway.LocalEndorser(n.Peers[0].Endorser), gateway.PrimaryFallback)
	if got := pool.Members(); !slices.Equal(got, []string{"peer0.Org1"}) {
		t.Fatalf("members of an empty pool %v, want the primary alone", got)
	}
	for _, c := range []*computeNode{c0, c1} {
		if _, err := pool.Add(c.name, c.c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Add("compute1", c1.c); !errors.Is(err, gateway.ErrMember) || !strings.Contains(err.Error(), `"compute1" is already a member`) {
		t.Fatalf("a second compute1: %v, want ErrMember naming it", err)
	}
	gw := poolGateway(t, n, pool)

	// compute0 is asked first and holds its proposal.
	held := make(chan struct{})
	go func() {
		defer close(held)
		endorseOK(t, gw, opening(t, user))
	}()
	<-c0.gs.entered
	for range 4 {
		endorseOK(t, gw, opening(t, user))
	}
	m := pool.Metrics()
	if m.InFlight["compute0"] != 1 || m.Served["compute1"] != 4 || m.Served["compute0"] != 0 {
		t.Fatalf("while compute0 holds one proposal: %s; want the next four on compute1", m)
	}
	close(c0.gs.gate)
	<-held
	c0.gs.gate = nil // no longer gated: the members tie and take turns
	for range 4 {
		endorseOK(t, gw, opening(t, user))
	}
	m = pool.Metrics()
	if m.Served["compute0"] != 3 || m.Served["compute1"] != 6 || m.Served["peer0.Org1"] != 0 || m.InFlight["compute0"] != 0 {
		t.Fatalf("after four more with nothing in flight: %s; want two more each and none on the primary", m)
	}
}

// TestPoolFailover: a compute node that stops answering (its server is
// stopped) costs a second ask on another member, not a refusal; removed
// members are not asked; with every member down the answer is a 503 with
// a retry hint that names each.
func TestPoolFailover(t *testing.T) {
	n := testnet.Start(t, testnet.Options{})
	user := n.Issue(t, "Org1", "user", identity.RoleClient)
	c0, c1 := startCompute(t, n, "compute0", false), startCompute(t, n, "compute1", false)
	pool := gateway.NewPool("peer0.Org1", gateway.LocalEndorser(n.Peers[0].Endorser), gateway.PrimaryFallback)
	remove0, err := pool.Add(c0.name, c0.c)
	if err != nil {
		t.Fatal(err)
	}
	remove1, err := pool.Add(c1.name, c1.c)
	if err != nil {
		t.Fatal(err)
	}
	gw := poolGateway(t, n, pool)
	c0.srv.Stop()
	for range 4 {
		endorseOK(t, gw, opening(t, user))
	}
	m := pool.Metrics()
	if m.Failed["compute0"] == 0 || m.Failovers != m.Failed["compute0"] || m.Served["compute1"] != 4 || m.Served["compute0"] != 0 {
		t.Fatalf("with compute0 stopped: %s; want compute1 to answer all four", m)
	}
	remove0()
	remove0() // removing twice is harmless
	if got := pool.Members(); !slices.Equal(got, []string{"compute1"}) {
		t.Fatalf("members after compute0 left: %v", got)
	}
	// compute1 leaves too: the primary endorses again.
	remove1()
	endorseOK(t, gw, opening(t, user))
	if m := pool.Metrics(); m.Served["peer0.Org1"] != 1 || m.Joins != 2 || m.Leaves != 2 {
		t.Fatalf("after both left: %s; want the primary to answer", m)
	}

	// A pool whose every member fails, its primary included.
	dead := gateway.NamedEndorser("dead", api.NewEndorserClient(dial(t, deadAddr(t))))
	down := gateway.NewPool("peer0.Org1", dead, gateway.PrimaryFallback)
	if _, err := down.Add(c0.name, c0.c); err != nil {
		t.Fatal(err)
	}
	r, err := poolGateway(t, n, down).Endorse(t.Context(), opening(t, user))
	if err != nil || r.Status != http.StatusServiceUnavailable || r.RetryAfterMs == 0 ||
		!strings.Contains(r.Message, "no endorser of peer0.Org1's pool answered") ||
		!strings.Contains(r.Message, "compute0: ") || !strings.Contains(r.Message, "peer0.Org1: ") {
		t.Fatalf("every member down: %v %d (retry after %d ms) %s; want a 503 with a retry hint naming compute0 and peer0.Org1", err, r.GetStatus(), r.GetRetryAfterMs(), r.GetMessage())
	}
}

// TestPoolDuplicateTxID: compute nodes have no tx index, so with one in
// the pool the gateway refuses a used tx id itself.
func TestPoolDuplicateTxID(t *testing.T) {
	n := testnet.Start(t, testnet.Options{})
	user := n.Issue(t, "Org1", "user", identity.RoleClient)
	c0 := startCompute(t, n, "compute0", false)
	pool := gateway.NewPool("peer0.Org1", gateway.LocalEndorser(n.Peers[0].Endorser), gateway.PrimaryFallback)
	if _, err := pool.Add(c0.name, c0.c); err != nil {
		t.Fatal(err)
	}
	gw := poolGateway(t, n, pool)
	sp := proposal(t, user, smallbank.Name, "create_account", "dup", "D", "5", "5")
	commitVia(t, gw, user, sp)
	r, err := gw.Endorse(t.Context(), sp)
	if err != nil || r.Status != http.StatusConflict || !strings.Contains(r.Message, "is already used") {
		t.Fatalf("endorsing a committed tx id again: %v %d %s; want 409", err, r.GetStatus(), r.GetMessage())
	}
}

var accounts atomic.Int64

// opening proposes to open a new account: every endorser endorses it.
func opening(t *testing.T, user *identity.Signer) *api.SignedProposal {
	name := fmt.Sprintf("pool%d", accounts.Add(1))
	return proposal(t, user, smallbank.Name, "create_account", name, name, "5", "5")
}

// commitVia endorses sp through gw, signs, submits and waits for the
// commit.
func commitVia(t *testing.T, gw *gateway.Gateway, user *identity.Signer, sp *api.SignedProposal) {
	t.Helper()
	r, err := gw.Endorse(t.Context(), sp)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("Endorse: %v %d %s", err, r.GetStatus(), r.GetMessage())
	}
	sig, err := user.Sign(r.Payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := proto.Marshal(&api.Transaction{Payload: r.Payload, Signature: sig})
	if err != nil {
		t.Fatal(err)
	}
	sr, err := gw.Submit(t.Context(), &api.SubmitRequest{Transaction: raw, WaitCommit: true})
	if err != nil || sr.Status != http.StatusOK || sr.Commit.GetCode() != api.TxValidationCode_VALID {
		t.Fatalf("Submit: %v %d %s %v", err, sr.GetStatus(), sr.GetMessage(), sr.GetCommit())
	}
}

// TestPoolStaleDefinition: a compute node whose answer names another
// definition sequence of the contract than the primary's endorser runs
// (it has not installed the primary's yet, or a newer one first) is not
// the answer: the pool counts it stale and the primary endorses; once
// the compute node runs the primary's definition it serves again.
func TestPoolStaleDefinition(t *testing.T) {
	n := testnet.Start(t, testnet.Options{})
	user := n.Issue(t, "Org1", "user", identity.RoleClient)
	c0 := startCompute(t, n, "compute0", false)
	contracts := map[string]contract.Contract{smallbank.Name: smallbank.New()}
	if err := c0.gs.e.SetDefinitions(contracts, map[string]endorser.Definition{smallbank.Name: {Sequence: 2}}); err != nil {
		t.Fatal(err)
	}
	pool := gateway.NewPool("peer0.Org1", gateway.LocalEndorser(n.Peers[0].Endorser), gateway.PrimaryFallback)
	if _, err := pool.Add(c0.name, c0.c); err != nil {
		t.Fatal(err)
	}
	gw := poolGateway(t, n, pool)
	endorseOK(t, gw, opening(t, user))
	if m := pool.Metrics(); m.Stale != 1 || m.StaleBy["compute0"] != 1 || m.Served["compute0"] != 0 || m.Served["peer0.Org1"] != 1 {
		t.Fatalf("compute0 at sequence 2, the primary at 0: %s; want compute0's answer stale and the primary's taken", m)
	}
	if err := c0.gs.e.SetDefinitions(contracts, nil); err != nil {
		t.Fatal(err)
	}
	endorseOK(t, gw, opening(t, user))
	if m := pool.Metrics(); m.Stale != 1 || m.Served["compute0"] != 1 {
		t.Fatalf("compute0 at the primary's sequence: %s; want it to serve", m)
	}
}
