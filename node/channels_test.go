package node_test

import (
	"context"
	"crypto/rand"
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
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestTwoChannels runs two channels, demo and demo2, each ordered by an
// orderer of its own, through two peer processes' worth of peers (in
// this process, real gRPC and Pebble) that each serve both on one
// listener. Smallbank's policy needs both orgs, so every endorsement
// also crosses to the other org's two-channel peer.
func TestTwoChannels(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	n := startNetworkSpec(t, localnet.Spec{Orgs: 2, Orderers: 1, Channels: 2,
		Batch: node.BatchConfig{MaxTxs: 100, MaxBytes: 1 << 20, Timeout: 5 * time.Millisecond}}, nil)
	for _, p := range n.peers {
		if got := p.Channels(); !slices.Equal(got, []string{"demo", "demo2"}) {
			t.Fatalf("peer %s serves %v, want [demo demo2]", p.Name, got)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gw := n.gateway(t, 0)
	if got, err := gw.Channels(ctx); err != nil || !slices.Equal(got, []string{"demo", "demo2"}) {
		t.Errorf("Channels: %v %v, want [demo demo2]", got, err)
	}
	a, b := gw.Contract("demo", smallbank.Name), gw.Contract("demo2", smallbank.Name)
	commitA := mustCommit(ctx, t, a, "create_account", "alice", "Alice", "100", "0")
	commitB := mustCommit(ctx, t, b, "create_account", "bob", "Bob", "200", "0")

	// Each channel sees its own state only.
	wantBalance(ctx, t, a, "alice", `"checking":100`)
	wantBalance(ctx, t, b, "bob", `"checking":200`)
	wantNoAccount(ctx, t, a, "bob")
	wantNoAccount(ctx, t, b, "alice")

	// Each channel's events carry its own transactions only.
	evA := txIDsUpTo(ctx, t, gw.OnChannel("demo"), commitA.Block)
	evB := txIDsUpTo(ctx, t, gw.OnChannel("demo2"), commitB.Block)
	if !evA[commitA.TxID] || evA[commitB.TxID] {
		t.Errorf("demo's events up to block %d: has its tx %v, demo2's tx %v; want true, false", commitA.Block, evA[commitA.TxID], evA[commitB.TxID])
	}
	if !evB[commitB.TxID] || evB[commitA.TxID] {
		t.Errorf("demo2's events up to block %d: has its tx %v, demo's tx %v; want true, false", commitB.Block, evB[commitB.TxID], evB[commitA.TxID])
	}
	// A tx id of demo is not known to demo2's commit status: the peer
	// answers from demo2's index, which has it not; demo's has it.
	if c, err := gw.OnChannel("demo").CommitStatus(ctx, commitA.TxID); err != nil || c.Block != commitA.Block {
		t.Errorf("demo commit status of its tx: %v, %v", c, err)
	}

	// A transaction endorsed on demo, submitted with demo2's routing,
	// is refused by demo2's gateway.
	tx, err := a.Endorse(ctx, "create_account", "carol", "Carol", "1", "0")
	if err != nil {
		t.Fatal(err)
	}
	var se *client.SubmitError
	if err := gw.OnChannel("demo2").SubmitTx(ctx, tx.ID(), tx.Bytes()); !errors.As(err, &se) || se.Status != 404 || !strings.Contains(se.Message, gateway.ErrWrongChannel.Error()) {
		t.Errorf("demo's tx submitted to demo2: %v, want a 404 naming %q", err, gateway.ErrWrongChannel)
	}

	// A proposal whose signed header names demo2, routed to demo: demo's
	// endorser refuses it. Routed nowhere on a two-channel peer: refused,
	// naming the channels. Routed to an unknown channel: refused by name.
	raw := rawGateway(t, n, 0)
	signer := clientSigner(t, n, 0)
	for _, tc := range []struct {
		header, route string
		status        int32
		want          string
	}{
		{"demo2", "demo", 404, `is for channel "demo2", this peer endorses for channel "demo"`},
		{"demo", "", 400, gateway.ErrNoChannel.Error() + ": this peer serves channels demo, demo2"},
		{"nope", "nope", 404, gateway.ErrUnknownChannel.Error() + ` "nope": this peer serves channel(s) demo, demo2`},
	} {
		sp := signedProposal(t, signer, tc.header, "query", "alice")
		sp.Channel = tc.route
		r, err := raw.Evaluate(ctx, sp)
		if err != nil || r.Status != tc.status || !strings.Contains(r.Message, tc.want) {
			t.Errorf("header %q routed to %q: %v %v, want status %d with %q", tc.header, tc.route, r, err, tc.status, tc.want)
		}
		er, err := raw.Endorse(ctx, sp)
		if err != nil || er.Status != tc.status || !strings.Contains(er.Message, tc.want) {
			t.Errorf("endorse: header %q routed to %q: %v %v, want status %d with %q", tc.header, tc.route, er, err, tc.status, tc.want)
		}
	}
	if _, err := gw.OnChannel("nope").CommitStatus(ctx, commitA.TxID); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), gateway.ErrUnknownChannel.Error()) {
		t.Errorf("commit status on an unknown channel: %v, want NotFound", err)
	}
	if _, err := gw.CommitStatus(ctx, commitA.TxID); status.Code(err) != codes.InvalidArgument {
		t.Errorf("commit status naming no channel on a two-channel peer: %v, want InvalidArgument", err)
	}
	events, errc := gw.OnChannel("nope").BlockEvents(ctx, 0)
	for range events {
	}
	if err := <-errc; status.Code(errors.Unwrap(err)) != codes.NotFound {
		t.Errorf("block events of an unknown channel: %v, want NotFound", err)
	}

	// Each channel's series carry its name; the page lints clean.
	scrape(t, n.peers[0].MetricsAddr(), `strand_committer_height{channel="demo"}`, `strand_committer_height{channel="demo2"}`,
		`strand_gateway_submit_total{channel="demo2"}`, `strand_blockstore_height{channel="demo"}`)

	// Each channel keeps its ledger in a directory of its own, and both
	// come back after a restart.
	for _, cfg := range n.configs {
		for _, ch := range []string{"demo", "demo2"} {
			if _, err := os.Stat(filepath.Join(cfg.DataDir, "channels", ch, "blocks")); cfg.Role == "peer" && err != nil {
				t.Errorf("%s's ledger of %s: %v", cfg.Name, ch, err)
			}
		}
	}
	restartPeers(t, n)
	gw = n.gateway(t, 0)
	a, b = gw.Contract("demo", smallbank.Name), gw.Contract("demo2", smallbank.Name)
	wantBalance(ctx, t, a, "alice", `"checking":100`)
	wantBalance(ctx, t, b, "bob", `"checking":200`)
	wantNoAccount(ctx, t, b, "alice")
	mustCommit(ctx, t, b, "create_account", "dave", "Dave", "1", "0")
}

func mustCommit(ctx context.Context, t *testing.T, c *client.Contract, fn string, args ...string) *client.Commit {
	t.Helper()
	commit, err := c.SubmitWithRetry(ctx, 50, fn, args...)
	if err != nil {
		t.Fatalf("%s%q: %v", fn, args, err)
	}
	if commit.Code != api.TxValidationCode_VALID {
		t.Fatalf("%s%q committed %v", fn, args, commit.Code)
	}
	return commit
}

func wantBalance(ctx context.Context, t *testing.T, c *client.Contract, id, want string) {
	t.Helper()
	raw, err := c.Evaluate(ctx, "query", id)
	if err != nil || !strings.Contains(string(raw), want) {
		t.Errorf("query %s: %s %v, want %s", id, raw, err, want)
	}
}

func wantNoAccount(ctx context.Context, t *testing.T, c *client.Contract, id string) {
	t.Helper()
	var ee *client.EndorseError
	if raw, err := c.Evaluate(ctx, "query", id); !errors.As(err, &ee) || ee.Status != 404 {
		t.Errorf("query %s: %s %v, want a 404 (no such account on this channel)", id, raw, err)
	}
}

// txIDsUpTo collects the tx ids of the block events from block 0 to last.
func txIDsUpTo(ctx context.Context, t *testing.T, gw *client.Gateway, last uint64) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, errc := gw.BlockEvents(ctx, 0)
	ids := map[string]bool{}
	for ev := range events {
		for _, id := range ev.TxIds {
			ids[id] = true
		}
		if ev.Number == last {
			return ids
		}
	}
	t.Fatalf("block events ended before block %d: %v", last, <-errc)
	return nil
}

// restartPeers closes every peer and starts it again from its config.
func restartPeers(t *testing.T, n *network) {
	t.Helper()
	i := 0
	for _, cfg := range n.configs {
		if cfg.Role != "peer" {
			continue
		}
		if err := n.peers[i].Close(); err != nil {
			t.Fatal(err)
		}
		p, err := node.StartPeer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		n.peers[i] = p
		i++
	}
}

func clientSigner(t *testing.T, n *network, i int) *identity.Signer {
	t.Helper()
	c := n.layout.Clients[i]
	s, err := c.Signer()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rawGateway is a gateway client of the i-th org's peer without the
// SDK, to send what the SDK would not.
func rawGateway(t *testing.T, n *network, i int) api.GatewayClient {
	t.Helper()
	c := n.layout.Clients[i]
	tlsCfg, err := node.ClientTLS(n.ch, c.TLSCert, c.TLSKey)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(n.peers[i].Addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return api.NewGatewayClient(cc)
}

// signedProposal is a smallbank proposal whose signed header names
// channel.
func signedProposal(t *testing.T, s *identity.Signer, channel, fn string, args ...string) *api.SignedProposal {
	t.Helper()
	nonce := make([]byte, client.NonceSize)
	rand.Read(nonce)
	hdr := &api.TxHeader{Channel: channel, Creator: s.Identity(), Nonce: nonce, TimestampUnixNano: time.Now().UnixNano()}
	hdr.TxId = api.TxID(nonce, hdr.Creator)
	p := &api.Proposal{Header: hdr, Contract: smallbank.Name, Function: fn}
	for _, a := range args {
		p.Args = append(p.Args, []byte(a))
	}
	raw, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := s.Sign(raw)
	if err != nil {
		t.Fatal(err)
	}
	return &api.SignedProposal{Proposal: raw, Signature: sig}
}
