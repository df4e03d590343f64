package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
)

// TestSubmitWaitCommit: with wait_commit, Submit answers with the
// transaction's commit, as CommitStatus would.
func TestSubmitWaitCommit(t *testing.T) {
	net := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw := gatewayClient(t, net.Peers[0].Addr)
	user := net.Issue(t, "Org1", "user", identity.RoleClient)
	er, err := gw.Endorse(ctx, proposal(t, user, smallbank.Name, "create_account", "w", "W", "1", "1"))
	if err != nil || er.Status != http.StatusOK {
		t.Fatalf("Endorse: %v %d %q", err, er.GetStatus(), er.GetMessage())
	}
	sig, _ := user.Sign(er.Payload)
	raw, _ := proto.Marshal(&api.Transaction{Payload: er.Payload, Signature: sig})
	r, err := gw.Submit(ctx, &api.SubmitRequest{Transaction: raw, WaitCommit: true})
	if err != nil || r.Status != http.StatusOK || r.Commit == nil || r.Commit.Code != api.TxValidationCode_VALID {
		t.Fatalf("Submit with wait_commit: %v, %v", r, err)
	}
	tp := new(api.TxPayload)
	if err := proto.Unmarshal(er.Payload, tp); err != nil {
		t.Fatal(err)
	}
	cs, err := gw.CommitStatus(ctx, &api.CommitStatusRequest{TxId: tp.Header.TxId})
	if err != nil || cs.Block != r.Commit.Block {
		t.Fatalf("CommitStatus %v, %v; Submit said block %d", cs, err, r.Commit.Block)
	}
}
