package gateway_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
)

// proposal builds a signed Smallbank proposal by hand, as the SDK would.
func proposal(t testing.TB, s *identity.Signer, contract, fn string, args ...string) *api.SignedProposal {
	t.Helper()
	nonce := make([]byte, 24)
	rand.Read(nonce)
	hdr := &api.TxHeader{Channel: testnet.Channel, Creator: s.Identity(), Nonce: nonce, TimestampUnixNano: time.Now().UnixNano()}
	hdr.TxId = api.TxID(nonce, hdr.Creator)
	p := &api.Proposal{Header: hdr, Contract: contract, Function: fn}
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

func gatewayClient(t testing.TB, addr string) api.GatewayClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return api.NewGatewayClient(cc)
}

// submit endorses, signs, submits and waits for one transaction.
func submit(t testing.TB, ctx context.Context, gw api.GatewayClient, s *identity.Signer, fn string, args ...string) (string, *api.CommitStatusResponse) {
	t.Helper()
	sp := proposal(t, s, smallbank.Name, fn, args...)
	er, err := gw.Endorse(ctx, sp)
	if err != nil || er.Status != http.StatusOK {
		t.Fatalf("Endorse %s: %v %d %s", fn, err, er.GetStatus(), er.GetMessage())
	}
	tp := new(api.TxPayload)
	if err := proto.Unmarshal(er.Payload, tp); err != nil {
		t.Fatal(err)
	}
	if len(tp.Endorsements) != 2 || tp.Endorsements[0].Endorser.Org != "Org1" || tp.Endorsements[1].Endorser.Org != "Org2" {
		t.Fatalf("endorsements %v, want Org1's then Org2's", tp.Endorsements)
	}
	sig, _ := s.Sign(er.Payload)
	raw, _ := proto.Marshal(&api.Transaction{Payload: er.Payload, Signature: sig})
	if sr, err := gw.Submit(ctx, &api.SubmitRequest{Transaction: raw}); err != nil || sr.Status != http.StatusOK {
		t.Fatalf("Submit %s: %v %d %s", fn, err, sr.GetStatus(), sr.GetMessage())
	}
	cs, err := gw.CommitStatus(ctx, &api.CommitStatusRequest{TxId: tp.Header.TxId})
	if err != nil {
		t.Fatal(err)
	}
	return tp.Header.TxId, cs
}

func TestEndorseRefusals(t *testing.T) {
	net := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw := gatewayClient(t, net.Peers[0].Addr)
	user := net.Issue(t, "Org1", "user", identity.RoleClient)

	bad := proposal(t, user, smallbank.Name, "create_account", "a", "A", "1", "1")
	bad.Signature[len(bad.Signature)/2] ^= 0xff
	for _, tc := range []struct {
		name   string
		sp     *api.SignedProposal
		status int32
		want   string
	}{
		{"bad signature", bad, 403, "peer"},
		{"unknown contract", proposal(t, user, "nosuch", "f"), 404, "nosuch"},
		{"garbage", &api.SignedProposal{Proposal: []byte{0xff, 0xff}}, 400, "does not decode"},
		{"empty", &api.SignedProposal{}, 400, "no proposal bytes"},
		{"peer as creator", proposal(t, net.Issue(t, "Org1", "p", identity.RolePeer), smallbank.Name, "query", "a"), 403, "expected client or admin"},
	} {
		r, err := gw.Endorse(ctx, tc.sp)
		if err != nil || r.Status != tc.status || !strings.Contains(r.Message, tc.want) || r.Payload != nil {
			t.Errorf("%s: Endorse = %v, %d %q; want %d mentioning %q", tc.name, err, r.GetStatus(), r.GetMessage(), tc.status, tc.want)
		}
	}
	if r, err := gw.Evaluate(ctx, bad); err != nil || r.Status != 403 {
		t.Errorf("Evaluate with a bad signature: %v %d %q, want 403", err, r.GetStatus(), r.GetMessage())
	}
	if r, err := gw.Submit(ctx, &api.SubmitRequest{Transaction: []byte("junk")}); err != nil || r.Status != 400 {
		t.Errorf("Submit of junk: %v %d %q, want 400", err, r.GetStatus(), r.GetMessage())
	}
	m := net.Peers[0].Gateway.Metrics()
	if m.EndorseRefused < 5 || m.Endorse < 5 {
		t.Errorf("metrics %s: want at least 5 refused endorsements", m)
	}
}

func TestCommitStatusTimeout(t *testing.T) {
	net := testnet.Start(t, testnet.Options{})
	gw := gatewayClient(t, net.Peers[1].Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := gw.CommitStatus(ctx, &api.CommitStatusRequest{TxId: "garbage"})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("CommitStatus of a garbage tx id: %v, want DeadlineExceeded (504)", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("CommitStatus took %v under a 200ms deadline", d)
	}
	if _, err := gw.CommitStatus(context.Background(), &api.CommitStatusRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("CommitStatus with no tx id: %v, want InvalidArgument", err)
	}
}

// TestBlockEvents opens streams before and after blocks commit and checks
// that each sees every block once, in order, across the switch from stored
// to live blocks.
func TestBlockEvents(t *testing.T) {
	net := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw := gatewayClient(t, net.Peers[0].Addr)
	user := net.Issue(t, "Org1", "user", identity.RoleClient)

	early, err := gw.BlockEvents(ctx, &api.BlockEventsRequest{Start: 0})
	if err != nil {
		t.Fatal(err)
	}
	committed := map[string]uint64{}
	for i := 0; i < 3; i++ {
		id, cs := submit(t, ctx, gw, user, "create_account", string(rune('a'+i)), "x", "10", "10")
		committed[id] = cs.Block
	}
	late, err := gw.BlockEvents(ctx, &api.BlockEventsRequest{Start: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		id, cs := submit(t, ctx, gw, user, "deposit_checking", string(rune('a'+i)), "5")
		committed[id] = cs.Block
	}
	height := net.Peers[0].Committer.Height()
	for name, s := range map[string]struct {
		stream grpc.ServerStreamingClient[api.BlockEvent]
		from   uint64
	}{"early": {early, 0}, "late": {late, 1}} {
		for want := s.from; want < height; want++ {
			ev, err := s.stream.Recv()
			if err != nil {
				t.Fatalf("%s stream at block %d: %v", name, want, err)
			}
			if ev.Number != want {
				t.Fatalf("%s stream: block %d, want %d", name, ev.Number, want)
			}
			for i, id := range ev.TxIds {
				if b, ok := committed[id]; ok && (b != ev.Number || ev.Codes[i] != byte(api.TxValidationCode_VALID)) {
					t.Errorf("%s stream: tx %s in block %d code %d, CommitStatus said block %d VALID", name, id, ev.Number, ev.Codes[i], b)
				}
			}
		}
	}
	// The server counts a block after its Send returns, which can be after
	// the client received it.
	deadline := time.Now().Add(5 * time.Second)
	m := net.Peers[0].Gateway.Metrics()
	for (m.BlockStreams != 2 || m.BlocksSent < 2*height-1) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		m = net.Peers[0].Gateway.Metrics()
	}
	if m.BlockStreams != 2 || m.BlocksSent < 2*height-1 {
		t.Errorf("metrics %s: want 2 streams and %d blocks sent", m, 2*height-1)
	}
}

// FuzzGatewayEndorse feeds arbitrary SignedProposal bytes to Endorse: it
// must answer every one without panicking or erroring.
func FuzzGatewayEndorse(f *testing.F) {
	net := testnet.Start(f, testnet.Options{})
	user := net.Issue(f, "Org1", "user", identity.RoleClient)
	for _, sp := range []*api.SignedProposal{
		proposal(f, user, smallbank.Name, "create_account", "a", "A", "1", "1"),
		proposal(f, user, smallbank.Name, "query", "a"),
		proposal(f, user, "nosuch", "f"),
		{Proposal: []byte{0x0a, 0x02, 0x0a, 0x00}},
	} {
		raw, _ := proto.Marshal(sp)
		f.Add(raw)
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0x01})
	gw := net.Peers[0].Gateway
	f.Fuzz(func(t *testing.T, data []byte) {
		sp := new(api.SignedProposal)
		if proto.Unmarshal(data, sp) != nil {
			sp = &api.SignedProposal{Proposal: data}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := gw.Endorse(ctx, sp)
		if err != nil || r == nil {
			t.Fatalf("Endorse: %v, %v; want a response", r, err)
		}
		if r.Status == http.StatusOK && len(r.Payload) == 0 || r.Status != http.StatusOK && r.Message == "" {
			t.Fatalf("Endorse: status %d with %d payload bytes and message %q", r.Status, len(r.Payload), r.Message)
		}
	})
}
