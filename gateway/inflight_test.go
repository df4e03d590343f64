package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/orderer/cut"
)

// TestBackpressure: with one transaction in flight allowed and blocks cut
// only after a second, a second transaction is refused with 429 and a
// retry hint until the first commits.
func TestBackpressure(t *testing.T) {
	net := testnet.Start(t, testnet.Options{MaxInFlight: 1,
		Batch: cut.Config{MaxTxs: 100, Timeout: time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw := gatewayClient(t, net.Peers[0].Addr)
	user := net.Issue(t, "Org1", "user", identity.RoleClient)

	endorse := func(acct string) *api.EndorseResponse {
		r, err := gw.Endorse(ctx, proposal(t, user, smallbank.Name, "create_account", acct, acct, "1", "1"))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sign := func(er *api.EndorseResponse) []byte {
		sig, _ := user.Sign(er.Payload)
		raw, _ := proto.Marshal(&api.Transaction{Payload: er.Payload, Signature: sig})
		return raw
	}
	first, second := endorse("a"), endorse("b")
	if first.Status != http.StatusOK || second.Status != http.StatusOK {
		t.Fatalf("endorsements before any submit: %d %q, %d %q", first.Status, first.Message, second.Status, second.Message)
	}
	if r, err := gw.Submit(ctx, &api.SubmitRequest{Transaction: sign(first)}); err != nil || r.Status != http.StatusOK {
		t.Fatalf("first Submit: %v %d %q", err, r.GetStatus(), r.GetMessage())
	}
	r, err := gw.Submit(ctx, &api.SubmitRequest{Transaction: sign(second)})
	if err != nil || r.Status != http.StatusTooManyRequests || r.RetryAfterMs == 0 || !strings.Contains(r.Message, "overloaded") {
		t.Fatalf("second Submit while the first is in flight: %v %d %q retry %d ms; want 429 with a retry hint",
			err, r.GetStatus(), r.GetMessage(), r.GetRetryAfterMs())
	}
	t.Log(r.Message)
	if er := endorse("c"); er.Status != http.StatusTooManyRequests || er.RetryAfterMs == 0 || er.Payload != nil {
		t.Fatalf("Endorse while full: %d %q retry %d ms; want 429 with a retry hint", er.Status, er.Message, er.RetryAfterMs)
	}
	if m := net.Peers[0].Gateway.Metrics(); m.Overloaded != 2 || m.InFlight != 1 {
		t.Errorf("metrics %s: want overloaded 2, in-flight 1", m)
	}
	// Once the first commits, the gateway takes work again.
	tp := new(api.TxPayload)
	if err := proto.Unmarshal(first.Payload, tp); err != nil {
		t.Fatal(err)
	}
	if cs, err := gw.CommitStatus(ctx, &api.CommitStatusRequest{TxId: tp.Header.TxId}); err != nil || cs.Code != api.TxValidationCode_VALID {
		t.Fatalf("CommitStatus of the first: %v %v", cs, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for net.Peers[0].Gateway.Metrics().InFlight != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the committed transaction still counts as in flight: %s", net.Peers[0].Gateway.Metrics())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r, err := gw.Submit(ctx, &api.SubmitRequest{Transaction: sign(second)}); err != nil || r.Status != http.StatusOK {
		t.Fatalf("second Submit after the first committed: %v %d %q", err, r.GetStatus(), r.GetMessage())
	}
}
