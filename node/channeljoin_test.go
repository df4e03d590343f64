package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// channelAdmin dials addr (a node of role) with the TLS certificate
// certFile/keyFile and returns its ChannelAdmin client.
func channelAdmin(t *testing.T, n *network, addr string, role identity.Role, certFile, keyFile string) api.ChannelAdminClient {
	t.Helper()
	tlsCfg, err := node.ClientTLS(n.ch, certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(node.ExpectServer(tlsCfg, role))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return api.NewChannelAdminClient(cc)
}

// asAdmin is channelAdmin with the TLS certificate of org's admin.
func asAdmin(t *testing.T, n *network, org, addr string, role identity.Role) api.ChannelAdminClient {
	t.Helper()
	a, err := n.layout.Admin(org)
	if err != nil {
		t.Fatal(err)
	}
	return channelAdmin(t, n, addr, role, a.TLSCert, a.TLSKey)
}

// createChannel writes channel id like n's (localnet.CreateChannel) and
// returns it with its genesis document.
func createChannel(t *testing.T, n *network, id string) (*node.ChannelConfig, []byte) {
	t.Helper()
	file, err := localnet.CreateChannel(n.layout, id)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := node.LoadChannel(file)
	if err != nil {
		t.Fatal(err)
	}
	return ch, ch.Genesis()
}

func wantCode(t *testing.T, what string, err error, code codes.Code, text string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(err.Error(), text) {
		t.Errorf("%s: %v; want %v with %q", what, err, code, text)
	}
}

// TestChannelJoinLeave: a running network (one orderer, two orgs' peers,
// in this process over real gRPC and Pebble) joins a channel created
// after it started, transacts on it, and its peer leaves it while a
// block-event stream of the channel is open: the stream ends, the ledger
// is deleted, the peer serves its node file's channel as before; it joins
// again and catches up from block 0, and serves the channel after a
// restart. Only the node org's admins may do any of it.
func TestChannelJoinLeave(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	n := startNetwork(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ch, doc := createChannel(t, n, "live")
	p1, p2 := n.peers[0], n.peers[1]
	ord := asAdmin(t, n, localnet.OrdererOrg, n.orderer.Addr, identity.RoleOrderer)
	admin1 := asAdmin(t, n, "Org1", p1.Addr, identity.RolePeer)

	// Who may: a client of the node's org, or another org's admin, may not.
	user := n.layout.Clients[0]
	_, err := channelAdmin(t, n, p1.Addr, identity.RolePeer, user.TLSCert, user.TLSKey).Join(ctx, &api.ChannelJoinRequest{Genesis: doc})
	wantCode(t, "Join by a client", err, codes.PermissionDenied, "admin TLS certificate of org Org1")
	_, err = asAdmin(t, n, "Org2", p1.Addr, identity.RolePeer).Join(ctx, &api.ChannelJoinRequest{Genesis: doc})
	wantCode(t, "Join by Org2's admin at Org1's peer", err, codes.PermissionDenied, "of org Org1")

	// What: a document edited by hand, one that leaves the node out.
	_, err = admin1.Join(ctx, &api.ChannelJoinRequest{Genesis: append([]byte(" "), doc...)})
	wantCode(t, "Join with a reformatted document", err, codes.InvalidArgument, "not canonical")
	other := *ch
	other.Channel, other.Orgs = "other", slices.Clone(ch.Orgs)
	other.Orgs[0].Peers = nil // Org1 has no peer in it
	_, err = admin1.Join(ctx, &api.ChannelJoinRequest{Genesis: other.Genesis()})
	wantCode(t, "Join a channel without the peer", err, codes.FailedPrecondition, "peer0.Org1")

	if info, err := ord.Join(ctx, &api.ChannelJoinRequest{Genesis: doc}); err != nil || info.Height != 1 || !info.Joined || info.Hash != ch.Hash() {
		t.Fatalf("orderer Join: %v %v; want height 1 (the genesis block), joined, hash %s", info, err, ch.Hash())
	}
	if _, err := admin1.Join(ctx, &api.ChannelJoinRequest{Genesis: doc}); err != nil {
		t.Fatal(err)
	}
	if _, err := asAdmin(t, n, "Org2", p2.Addr, identity.RolePeer).Join(ctx, &api.ChannelJoinRequest{Genesis: doc}); err != nil {
		t.Fatal(err)
	}
	_, err = admin1.Join(ctx, &api.ChannelJoinRequest{Genesis: doc})
	wantCode(t, "Join again", err, codes.AlreadyExists, `serves channel "live" already`)

	gw := n.gateway(t, 0)
	live, demo := gw.Contract("live", smallbank.Name), gw.Contract("demo", smallbank.Name)
	commit := mustCommit(ctx, t, live, "create_account", "alice", "Alice", "100", "0")
	wantBalance(ctx, t, live, "alice", `"checking":100`)
	wantNoAccount(ctx, t, demo, "alice")
	mustCommit(ctx, t, demo, "create_account", "bob", "Bob", "5", "0")
	if got := p1.Channels(); !slices.Equal(got, []string{"demo", "live"}) {
		t.Errorf("peer serves %v, want [demo live]", got)
	}
	list, err := admin1.List(ctx, &api.ChannelListRequest{})
	if err != nil || len(list.Channels) != 2 || list.Channels[0].Joined || !list.Channels[1].Joined || list.Channels[1].Height <= commit.Block {
		t.Errorf("List: %v %v; want demo (configured) and live (joined, above block %d)", list, err, commit.Block)
	}

	// Leaving the node file's channel is refused; leaving live ends its
	// event stream and deletes its ledger.
	_, err = admin1.Leave(ctx, &api.ChannelLeaveRequest{Channel: "demo"})
	wantCode(t, "Leave demo", err, codes.FailedPrecondition, "is in the node file")
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	events, errc := gw.OnChannel("live").BlockEvents(sctx, 0)
	for ev := range events {
		if ev.Number == commit.Block {
			break
		}
	}
	if _, err := admin1.Leave(ctx, &api.ChannelLeaveRequest{Channel: "live"}); err != nil {
		t.Fatal(err)
	}
	for range events { // drained until the stream ends
	}
	if err := <-errc; err == nil {
		t.Error("the block-event stream of live ended without an error when the peer left the channel")
	}
	var cfg1 *node.NodeConfig
	for _, c := range n.configs {
		if c.Name == p1.Name {
			cfg1 = c
		}
	}
	dir := filepath.Join(cfg1.DataDir, "channels", "live")
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after the leave: %v; want it deleted", dir, err)
	}
	if _, err := live.Evaluate(ctx, "query", "alice"); err == nil || !strings.Contains(err.Error(), `unknown channel "live"`) {
		t.Errorf("query on live after the leave: %v; want unknown channel", err)
	}
	wantBalance(ctx, t, demo, "bob", `"checking":5`)

	// Join again: the ledger comes back from the orderer, block 0 on.
	if _, err := admin1.Join(ctx, &api.ChannelJoinRequest{Genesis: doc}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		raw, err := live.Evaluate(ctx, "query", "alice")
		if err == nil && strings.Contains(string(raw), `"checking":100`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("query alice on live after joining again: %s %v", raw, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A restart serves the joined channel from the data directory.
	if err := p1.Close(); err != nil {
		t.Fatal(err)
	}
	p1, err = node.StartPeer(cfg1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p1.Close() })
	if got := p1.Channels(); !slices.Equal(got, []string{"demo", "live"}) {
		t.Errorf("restarted peer serves %v, want [demo live]", got)
	}
	wantBalance(ctx, t, n.gateway(t, 0).Contract("live", smallbank.Name), "alice", `"checking":100`)
}

// TestChannelFromGenesis: a genesis document decodes to the channel that
// wrote it; a reformatted or unknown one is refused by name.
func TestChannelFromGenesis(t *testing.T) {
	layout, err := localnet.Generate(t.TempDir(), localnet.Spec{Orgs: 2, Orderers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := node.LoadChannel(layout.Channel)
	if err != nil {
		t.Fatal(err)
	}
	doc := ch.Genesis()
	back, err := node.ChannelFromGenesis(doc, "doc")
	if err != nil {
		t.Fatal(err)
	}
	if back.Hash() != ch.Hash() || back.Channel != ch.Channel || len(back.Orgs) != len(ch.Orgs) {
		t.Errorf("round trip: %s %s, want %s %s", back.Channel, back.Hash(), ch.Channel, ch.Hash())
	}
	for _, tc := range []struct {
		name string
		doc  []byte
		want string
	}{
		{"empty", nil, "empty genesis document"},
		{"not JSON", []byte("channel: demo"), "not a genesis document"},
		{"unknown field", []byte(strings.Replace(string(doc), `{"Format"`, `{"Extra":1,"Format"`, 1)), "unknown field"},
		{"trailing data", append(slices.Clone(doc), []byte(`{}`)...), "data after"},
		{"reformatted", append(slices.Clone(doc), '\n'), "not canonical"},
		{"format", []byte(strings.Replace(string(doc), "strand-channel-v2", "strand-channel-v9", 1)), `format "strand-channel-v9"`},
		{"bad CA", []byte(strings.Replace(string(doc), `"CACerts":["`, `"CACerts":["AAAA`, 1)), "CA certificate 0"},
		{"too large", make([]byte, node.MaxGenesisBytes+1), "at most"},
	} {
		if _, err := node.ChannelFromGenesis(tc.doc, "doc"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	wasm := *ch
	wasm.Contracts = append(slices.Clone(ch.Contracts), node.ContractConfig{Name: "mod", Policy: "OR('Org1.peer')", Runtime: node.RuntimeWasm, Hash: strings.Repeat("ab", 32)})
	if _, err := node.ChannelFromGenesis(wasm.Genesis(), "doc"); err == nil || !strings.Contains(err.Error(), "runtime wasm") {
		t.Errorf("a genesis with a wasm contract: %v, want a refusal naming runtime wasm", err)
	}
}

// FuzzChannelFromGenesis: a join request's document never crashes the
// decoder, and whatever it accepts is canonical.
func FuzzChannelFromGenesis(f *testing.F) {
	layout, err := localnet.Generate(f.TempDir(), localnet.Spec{Orgs: 2, Orderers: 1})
	if err != nil {
		f.Fatal(err)
	}
	ch, err := node.LoadChannel(layout.Channel)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ch.Genesis())
	f.Add([]byte(`{"Format":"strand-channel-v2","Channel":"x","Orgs":[],"Batch":{"MaxTxs":1,"MaxBytes":1,"Timeout":1},"Contracts":null}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := node.ChannelFromGenesis(doc, "fuzz")
		if err != nil {
			return
		}
		if got := c.Genesis(); string(got) != string(doc) {
			t.Fatalf("accepted a document that re-encodes to other bytes:\n%s\n%s", doc, got)
		}
	})
}

// TestChannelJoinRaft: a channel created while a network of three
// orderers runs is joined by its peers, then by each orderer, one after
// the other: its Raft group elects a leader once a quorum has joined, the
// peers' follow loops find it, and it orders the channel's transactions
// beside demo's.
func TestChannelJoinRaft(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	n := startNetwork(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, doc := createChannel(t, n, "live")
	// The peers first: they follow orderers that do not order the channel
	// yet, and keep asking until they do.
	for i, p := range n.peers {
		if _, err := asAdmin(t, n, []string{"Org1", "Org2"}[i], p.Addr, identity.RolePeer).Join(ctx, &api.ChannelJoinRequest{Genesis: doc}); err != nil {
			t.Fatalf("peer %s: %v", p.Name, err)
		}
	}
	for _, o := range n.orderers {
		if _, err := asAdmin(t, n, localnet.OrdererOrg, o.Addr, identity.RoleOrderer).Join(ctx, &api.ChannelJoinRequest{Genesis: doc}); err != nil {
			t.Fatalf("orderer %s: %v", o.Name, err)
		}
	}
	gw := n.gateway(t, 0)
	live := gw.Contract("live", smallbank.Name)
	for i := range 5 {
		mustCommit(ctx, t, live, "create_account", "acct"+string(rune('a'+i)), "A", "10", "0")
	}
	mustCommit(ctx, t, gw.Contract("demo", smallbank.Name), "create_account", "z", "Z", "1", "0")
	wantBalance(ctx, t, live, "accta", `"checking":10`)
	for _, o := range n.orderers {
		if got := o.Channels.IDs(); !slices.Equal(got, []string{"demo", "live"}) {
			t.Errorf("orderer %s orders %v, want [demo live]", o.Name, got)
		}
	}
}
