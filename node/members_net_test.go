package node_test

import (
	"context"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestAddedOrgEndorses: once a membership update adds Org3 with its peer
// (api.MembersOrg.Peers), Org1's gateway asks that peer to endorse, so
// kv upgraded to AND('Org1.peer','Org3.peer') commits VALID through
// Org1's gateway; once an update removes Org3, Org1's gateway no longer
// asks it and refuses such a proposal itself, naming the org. A restarted
// peer reads Org3's peers from its state. With the default read policy
// (every member org), Org3's client reads block events from Org1's peer
// once Org3 is added, and its stream ends once Org3 is removed; then its
// handshakes are refused, counted as org_removed, and ProbeTLS tells the
// refusal from a stopped node.
func TestAddedOrgEndorses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	n := startNetwork(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p3 := n.addOrg(t, ctx, "Org3")
	org1 := n.gateway(t, 0).Contract(n.ch.Channel, "kv")
	n.define(t, ctx, &lifecycle.Definition{Name: "kv", Version: "2", Sequence: 2, Runtime: lifecycle.RuntimeBuiltin,
		Policy: "AND('Org1.peer','Org3.peer')"}, append(n.peers, p3)...)
	c, err := org1.Submit(ctx, "insert", "k3", "v3")
	if err != nil || c.Code != api.TxValidationCode_VALID {
		t.Fatalf("kv needing Org3's endorsement, through Org1's gateway: %v, %v", c, err)
	}
	// Restarted, Org1's peer finds Org3's peer in its state.
	n.peers[0].Close()
	p1, err := node.StartPeer(n.configs[1]) // configs: orderer0, peer0.Org1, ...
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p1.Close() })
	n.peers[0] = p1
	if c, err := org1.Submit(ctx, "insert", "k3b", "v3"); err != nil || c.Code != api.TxValidationCode_VALID {
		t.Fatalf("kv needing Org3's endorsement, through Org1's restarted gateway: %v, %v", c, err)
	}

	// The default read policy follows the membership: Org3's client
	// reads block events from Org1's peer; its stream ends once Org3 is
	// removed.
	c3 := n.connectAs(t, "Org3", "peer0.Org1")
	events, errc := c3.Gateway.BlockEvents(ctx, 0)
	if ev := <-events; ev == nil || ev.Number != 0 {
		t.Fatalf("Org3's client, block events from peer0.Org1: first %v, %v", ev, <-errc)
	}

	n.submitMembers(t, ctx, &api.MembersUpdate{Sequence: 1, Remove: []string{"Org3"}}, n.peers...)
	for range events {
	}
	if err := <-errc; status.Code(errors.Unwrap(err)) != codes.PermissionDenied || !strings.Contains(err.Error(), "removed org") {
		t.Errorf("Org3's client's block events after Org3's removal: %v, want PermissionDenied naming the removal", err)
	}
	// Its new connections are refused at TLS: the peer counts the
	// refusal by reason, and a probe tells it from a node that is down.
	c3 = n.connectAs(t, "Org3", "peer0.Org1")
	if _, err := c3.Contract("kv").Evaluate(ctx, "read", "k3"); err == nil {
		t.Fatal("Org3's client served after Org3's removal")
	}
	// The server counts after it sent its alert, which the client may
	// read first.
	for n.peers[0].TLSMetrics().OrgRemoved == 0 {
		if ctx.Err() != nil {
			t.Fatalf("peer0.Org1's TLS metrics %+v: no refusal counted as org_removed", n.peers[0].TLSMetrics())
		}
		time.Sleep(time.Millisecond)
	}
	if err := c3.Probe(ctx); !errors.Is(err, node.ErrTLSRefused) {
		t.Errorf("probing peer0.Org1 as Org3's client: %v, want ErrTLSRefused", err)
	}
	if err := n.connectAs(t, "Org1", "peer0.Org1").Probe(ctx); err != nil {
		t.Errorf("probing peer0.Org1 as Org1's client: %v", err)
	}
	down := n.connectAs(t, "Org2", "peer0.Org2")
	n.peers[1].Close()
	if err := down.Probe(ctx); !errors.Is(err, node.ErrNotListening) {
		t.Errorf("probing stopped peer0.Org2: %v, want ErrNotListening", err)
	}
	_, err = org1.Submit(ctx, "insert", "k4", "v4")
	var ee *client.EndorseError
	if !errors.As(err, &ee) || ee.Status != http.StatusPreconditionFailed || !strings.Contains(err.Error(), "knows no peer of org Org3") {
		t.Fatalf("kv needing removed Org3, through Org1's gateway: %v; want 412 saying the gateway knows no peer of Org3", err)
	}
}

// addOrg generates org into n's layout, submits the membership update
// (sequence 0) that adds it with its peer, and starts that peer, which
// joins with the update; it returns once n's peers have the update in
// force.
func (n *network) addOrg(t *testing.T, ctx context.Context, org string) *node.Peer {
	t.Helper()
	pn, join, caPEM, err := localnet.AddOrg(n.layout, org)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(caPEM)
	if b == nil {
		t.Fatalf("%s's CA certificate is not PEM", org)
	}
	ca := b.Bytes
	raw := n.submitMembers(t, ctx, &api.MembersUpdate{Add: []api.MembersOrg{{ID: org, CACerts: [][]byte{ca}, TLSCACerts: [][]byte{ca},
		Peers: []api.MembersPeer{{Name: pn.Name, Address: pn.Address}}}}}, n.peers...)
	if err := os.WriteFile(join, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := node.LoadNode(pn.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics = "127.0.0.1:0"
	p, err := node.StartPeer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// submitMembers signs u (channel set here) as the admins of every genesis
// org but those it removes, submits it to the orderer and waits until
// peers have it in force. It returns the signed envelope.
func (n *network) submitMembers(t *testing.T, ctx context.Context, u *api.MembersUpdate, peers ...*node.Peer) []byte {
	t.Helper()
	u.Channel = n.ch.Channel
	body, err := api.EncodeMembersUpdate(u)
	if err != nil {
		t.Fatal(err)
	}
	env := &api.ConfigEnvelope{Update: body}
	for _, o := range n.ch.Orgs {
		if len(o.Peers) == 0 {
			continue
		}
		if err := env.AddSignature(n.admin(t, o.ID)); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := api.EncodeMembers(env)
	if err != nil {
		t.Fatal(err)
	}
	n.submitRaw(t, ctx, raw)
	for _, p := range peers {
		for p.Committer.Revocations().Sequence() < u.Sequence+1 {
			if ctx.Err() != nil {
				t.Fatalf("%s: membership update %d not in force: %v", p.Name, u.Sequence, ctx.Err())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return raw
}

// define submits def (channel set here) as a definition transaction
// signed by the genesis orgs' admins and waits until peers run it.
func (n *network) define(t *testing.T, ctx context.Context, def *lifecycle.Definition, peers ...*node.Peer) {
	t.Helper()
	def.Channel = n.ch.Channel
	if _, err := def.Encode(); err != nil {
		t.Fatal(err)
	}
	var signers []api.Signer
	for _, o := range n.ch.Orgs {
		if len(o.Peers) > 0 {
			signers = append(signers, n.admin(t, o.ID))
		}
	}
	nonce := make([]byte, client.NonceSize)
	rand.Read(nonce)
	raw, _, err := api.BuildTx(api.TxSpec{Channel: def.Channel, Contract: lifecycle.Namespace, Function: "define", Nonce: nonce,
		Timestamp: time.Now().UnixNano(), RWSet: lifecycle.Writes(def, nil)}, signers[0], signers)
	if err != nil {
		t.Fatal(err)
	}
	n.submitRaw(t, ctx, raw)
	for _, p := range peers {
		for {
			if e, ok := p.Committer.Definitions().Get(def.Name); ok && e.Sequence == def.Sequence {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: definition of %s sequence %d not in force: %v", p.Name, def.Name, def.Sequence, ctx.Err())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// submitRaw submits raw to the first orderer as Org1's admin; it asks
// again while the orderer answers 503 (no Raft leader yet).
func (n *network) submitRaw(t *testing.T, ctx context.Context, raw []byte) {
	t.Helper()
	a, err := n.layout.Admin("Org1")
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := node.ClientTLS(n.ch, a.TLSCert, a.TLSKey)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(n.orderer.Addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for {
		r, err := api.NewOrdererClient(cc).Submit(ctx, &api.SubmitRequest{Transaction: raw})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == http.StatusOK {
			return
		}
		if r.Status != http.StatusServiceUnavailable || ctx.Err() != nil {
			t.Fatalf("orderer: %d %s", r.Status, r.Message)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (n *network) admin(t *testing.T, org string) *identity.Signer {
	t.Helper()
	a, err := n.layout.Admin(org)
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Signer()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// connectAs connects org's first client to peer (by name).
func (n *network) connectAs(t *testing.T, org, peer string) *localnet.Conn {
	t.Helper()
	cl, err := n.layout.Client(org)
	if err != nil {
		t.Fatal(err)
	}
	c, err := n.layout.ConnectAs(cl, peer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
