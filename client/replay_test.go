package client_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
)

// TestReplayedEndorsementRefused is issue #15's rewrap attack end to end:
// Org2's client takes an Org1 client's endorsed deposit (response payload
// and endorsements), wraps it under its own tx id and signature, and
// submits it first, through its gateway and straight to the orderer. Both
// refuse it at their door, naming the binding; the victim's deposit then
// commits VALID. A replay of the committed deposit under a new tx id is
// refused the same way.
func TestReplayedEndorsementRefused(t *testing.T) {
	net := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice := net.Issue(t, "Org1", "alice", identity.RoleClient)
	mallory := net.Issue(t, "Org2", "mallory", identity.RoleClient)
	bank := connect(t, net.Peers[0].Addr, alice).Contract(testnet.Channel, smallbank.Name)
	must := committed(t)
	must(bank.Submit(ctx, "create_account", "a1", "Alice", "1000", "500"))

	deposit, err := bank.Endorse(ctx, "deposit_checking", "a1", "50")
	if err != nil {
		t.Fatal(err)
	}
	stolen := rewrapAs(t, deposit.Bytes(), mallory)
	gw := api.NewGatewayClient(dialInsecure(t, net.Peers[1].Addr))
	ord := api.NewOrdererClient(dialInsecure(t, net.OrdererAddr))
	refused := func(what string, r *api.SubmitResponse, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if r.Status != http.StatusBadRequest || !strings.Contains(r.Message, "endorsement bound to another transaction") ||
			!strings.Contains(r.Message, deposit.ID()) {
			t.Errorf("%s: status %d %q; want 400 naming the binding and the endorsed tx %s", what, r.Status, r.Message, deposit.ID())
		}
		t.Logf("%s: %d %s", what, r.Status, r.Message)
	}
	r, err := gw.Submit(ctx, &api.SubmitRequest{Transaction: stolen})
	refused("rewrapped deposit through Org2's gateway", r, err)
	r, err = ord.Submit(ctx, &api.SubmitRequest{Transaction: stolen})
	refused("rewrapped deposit straight to the orderer", r, err)

	c := must(deposit.SubmitAndWait(ctx))
	if b := balance(t, ctx, bank, "a1"); b.Checking != 1050 {
		t.Errorf("checking balance %d after the deposit, want 1050", b.Checking)
	}
	replay := rewrapAs(t, deposit.Bytes(), alice)
	r, err = ord.Submit(ctx, &api.SubmitRequest{Transaction: replay})
	refused("committed deposit replayed under a new tx id", r, err)
	if b := balance(t, ctx, bank, "a1"); b.Checking != 1050 {
		t.Errorf("checking balance %d after the replay (block %d), want 1050", b.Checking, c.Block)
	}
}

// rewrapAs wraps raw's response payload and endorsements, unchanged, in a
// new transaction of creator's with a fresh nonce.
func rewrapAs(t *testing.T, raw []byte, creator *identity.Signer) []byte {
	t.Helper()
	env, p := new(api.Transaction), new(api.TxPayload)
	if err := proto.Unmarshal(raw, env); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(env.Payload, p); err != nil {
		t.Fatal(err)
	}
	nonce := []byte("replay-" + time.Now().String())
	p.Header = &api.TxHeader{Channel: p.Header.Channel, Creator: creator.Identity(), Nonce: nonce,
		TxId: api.TxID(nonce, creator.Identity()), TimestampUnixNano: time.Now().UnixNano()}
	out, _, err := api.SignTx(p, creator)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func dialInsecure(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}
