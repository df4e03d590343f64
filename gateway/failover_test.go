package gateway_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
	"github.com/strand-ledger/strand/policy"
)

// serveEndorser serves e's Endorser service on 127.0.0.1 until the test
// ends and returns its address.
func serveEndorser(t testing.TB, e *endorser.Endorser) string {
	return serve(t, func(s *grpc.Server) { api.RegisterEndorserServer(s, gateway.NewEndorserServer(e)) })
}

// serve serves what register registers on 127.0.0.1, until the test ends,
// and returns the address.
func serve(t testing.TB, register func(*grpc.Server)) string {
	t.Helper()
	srv := grpc.NewServer()
	register(srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func dial(t testing.TB, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// deadAddr returns an address nothing listens on.
func deadAddr(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// gatewayOver builds a second gateway on Org1's peer with the given
// remote Org2 peers and orderers.
func gatewayOver(t testing.TB, n *testnet.Network, org2 []api.EndorserClient, orderers []api.OrdererClient) *gateway.Gateway {
	t.Helper()
	p := n.Peers[0]
	gw, err := gateway.New(gateway.Config{Channel: testnet.Channel, LocalOrg: "Org1", Local: p.Endorser,
		Remote:   map[string][]api.EndorserClient{"Org2": org2},
		Policies: map[string]*policy.Policy{smallbank.Name: policy.MustParse("AND('Org1.peer','Org2.peer')")},
		Orderers: orderers, Ledger: gateway.PeerLedger(p.Store, p.Committer), Blocks: p.Store, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

func TestFailover(t *testing.T) {
	n := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	user := n.Issue(t, "Org1", "user", identity.RoleClient)
	dead := deadAddr(t)
	gw := gatewayOver(t, n,
		[]api.EndorserClient{gateway.NamedEndorser(dead, api.NewEndorserClient(dial(t, dead))), api.NewEndorserClient(dial(t, n.Peers[1].Addr))},
		[]api.OrdererClient{api.NewOrdererClient(dial(t, dead)), api.NewOrdererClient(dial(t, n.OrdererAddr))})

	er, err := gw.Endorse(ctx, proposal(t, user, smallbank.Name, "create_account", "a", "A", "5", "5"))
	if err != nil || er.Status != http.StatusOK {
		t.Fatalf("Endorse with Org2's first peer down: %v %d %s", err, er.GetStatus(), er.GetMessage())
	}
	tp := new(api.TxPayload)
	if err := proto.Unmarshal(er.Payload, tp); err != nil {
		t.Fatal(err)
	}
	sig, _ := user.Sign(er.Payload)
	raw, _ := proto.Marshal(&api.Transaction{Payload: er.Payload, Signature: sig})
	if sr, err := gw.Submit(ctx, &api.SubmitRequest{Transaction: raw}); err != nil || sr.Status != http.StatusOK {
		t.Fatalf("Submit with the first orderer down: %v %d %s", err, sr.GetStatus(), sr.GetMessage())
	}
	cs, err := gw.CommitStatus(ctx, &api.CommitStatusRequest{TxId: tp.Header.TxId})
	if err != nil || cs.Code != api.TxValidationCode_VALID {
		t.Fatalf("CommitStatus: %v %v", cs, err)
	}
	if m := gw.Metrics(); m.EndorseFailover != 1 || m.SubmitFailover != 1 {
		t.Errorf("metrics %s: want one endorse and one submit failover", m)
	}

	// Nobody to fail over to.
	down := gatewayOver(t, n, []api.EndorserClient{api.NewEndorserClient(dial(t, dead))},
		[]api.OrdererClient{api.NewOrdererClient(dial(t, dead))})
	er, _ = down.Endorse(ctx, proposal(t, user, smallbank.Name, "query", "a"))
	if er.Status != http.StatusServiceUnavailable || !strings.Contains(er.Message, "no peer of org Org2") || !strings.Contains(er.Message, "peer #0 of org Org2: unreachable (") {
		t.Errorf("Endorse with Org2 down: %d %s, want 503 naming Org2", er.Status, er.Message)
	}
	sr, _ := down.Submit(ctx, &api.SubmitRequest{Transaction: raw})
	if sr.Status != http.StatusServiceUnavailable || strings.Count(sr.Message, tp.Header.TxId) != 1 || !strings.Contains(sr.Message, ": unreachable (") {
		t.Errorf("Submit with the orderers down: %d %s, want 503 naming the tx once and the orderer unreachable", sr.Status, sr.Message)
	}
}

// TestDisagreement gives Org2 an endorser whose state holds the same
// account at another version: the ResponsePayloads differ and Endorse
// answers 500 after its attempts.
func TestDisagreement(t *testing.T) {
	n := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	user := n.Issue(t, "Org1", "user", identity.RoleClient)
	gw := gatewayClient(t, n.Peers[0].Addr)
	submit(t, ctx, gw, user, "create_account", "a", "A", "5", "5")

	stale := memdb.New()
	var b statedb.Batch
	for _, key := range []string{"account_a", "checking_a", "savings_a"} {
		v, ok, err := n.Peers[0].State.Get(smallbank.Name, key)
		if err != nil || !ok {
			t.Fatalf("state %s: %v %v", key, ok, err)
		}
		b.Put(smallbank.Name, key, v.Data, statedb.Version{Block: 99})
	}
	if err := stale.Apply(&b, 100, false); err != nil {
		t.Fatal(err)
	}
	e, err := endorser.New(endorser.Config{Channel: testnet.Channel, Registry: n.Registry,
		Signer:    n.Issue(t, "Org2", "peer9", identity.RolePeer),
		Contracts: map[string]contract.Contract{smallbank.Name: smallbank.New()},
		State:     stale, Seen: func(string) (bool, error) { return false, nil }})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveEndorser(t, e)
	g := gatewayOver(t, n, []api.EndorserClient{api.NewEndorserClient(dial(t, addr))},
		[]api.OrdererClient{api.NewOrdererClient(dial(t, n.OrdererAddr))})
	er, _ := g.Endorse(ctx, proposal(t, user, smallbank.Name, "deposit_checking", "a", "1"))
	if er.Status != http.StatusInternalServerError || !strings.Contains(er.Message, "endorsers disagree") || !strings.Contains(er.Message, "Org2") {
		t.Fatalf("Endorse over peers with different state: %d %s, want 500 endorsers disagree naming the peers", er.Status, er.Message)
	}
	if m := g.Metrics(); m.EndorseRetried != gateway.DefaultEndorseAttempts-1 {
		t.Errorf("metrics %s: want %d retries", m, gateway.DefaultEndorseAttempts-1)
	}

	// A remote peer that has not seen the account refuses what the local
	// peer endorsed: asked again, then its refusal is the answer.
	empty, err := endorser.New(endorser.Config{Channel: testnet.Channel, Registry: n.Registry,
		Signer:    n.Issue(t, "Org2", "peer8", identity.RolePeer),
		Contracts: map[string]contract.Contract{smallbank.Name: smallbank.New()},
		State:     memdb.New(), Seen: func(string) (bool, error) { return false, nil }})
	if err != nil {
		t.Fatal(err)
	}
	addr2 := serveEndorser(t, empty)
	g2 := gatewayOver(t, n, []api.EndorserClient{gateway.NamedEndorser("behind", api.NewEndorserClient(dial(t, addr2)))},
		[]api.OrdererClient{api.NewOrdererClient(dial(t, n.OrdererAddr))})
	er, _ = g2.Endorse(ctx, proposal(t, user, smallbank.Name, "deposit_checking", "a", "1"))
	if er.Status != http.StatusNotFound || !strings.Contains(er.Message, "peer behind of org Org2") {
		t.Fatalf("Endorse with Org2's peer behind: %d %s, want its 404 naming it", er.Status, er.Message)
	}
	if m := g2.Metrics(); m.EndorseRetried != gateway.DefaultEndorseAttempts-1 {
		t.Errorf("metrics %s: want %d retries", m, gateway.DefaultEndorseAttempts-1)
	}
}
