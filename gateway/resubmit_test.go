package gateway_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
)

// losingOrderer stands between a gateway and the real orderer: it answers
// 200 to the first Submit of each transaction without passing it on, as a
// Raft leader that admits a transaction and dies before ordering it. When
// late is set it passes the first copy on after the second: the lost copy
// turns up after all, behind its resubmission.
type losingOrderer struct {
	api.OrdererClient
	late bool
	mu   sync.Mutex
	held map[string]*api.SubmitRequest
}

func (o *losingOrderer) Submit(ctx context.Context, req *api.SubmitRequest, opts ...grpc.CallOption) (*api.SubmitResponse, error) {
	tx, _, err := api.DecodeTx(req.GetTransaction())
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	first, seen := o.held[tx.ID()]
	if !seen {
		o.held[tx.ID()] = req
	}
	o.mu.Unlock()
	if !seen {
		return &api.SubmitResponse{Status: http.StatusOK}, nil
	}
	r, err := o.OrdererClient.Submit(ctx, req, opts...)
	if err == nil && o.late {
		_, err = o.OrdererClient.Submit(ctx, first, opts...)
	}
	return r, err
}

// TestResubmitLost: a transaction the orderer admitted and lost is sent
// again once it is overdue, and the client waiting with wait_commit hears
// it committed. Without resubmission it waits out its deadline.
// TestResubmitLost/late: the lost copy is ordered after all, behind its
// resubmission: the chain holds the id twice, VALID then DUPLICATE_TXID,
// and the client and CommitStatus answer with the first, VALID, copy.
func TestResubmitLost(t *testing.T) {
	for _, late := range []bool{false, true} {
		name := "lost"
		if late {
			name = "late"
		}
		t.Run(name, func(t *testing.T) {
			n := testnet.Start(t, testnet.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			user := n.Issue(t, "Org1", "user", identity.RoleClient)
			o := &losingOrderer{OrdererClient: api.NewOrdererClient(dial(t, n.OrdererAddr)), late: late, held: map[string]*api.SubmitRequest{}}
			gw := gatewayOver(t, n, []api.EndorserClient{api.NewEndorserClient(dial(t, n.Peers[1].Addr))}, []api.OrdererClient{o})

			er, err := gw.Endorse(ctx, proposal(t, user, smallbank.Name, "create_account", "a", "A", "5", "5"))
			if err != nil || er.Status != http.StatusOK {
				t.Fatalf("Endorse: %v %d %s", err, er.GetStatus(), er.GetMessage())
			}
			tp := new(api.TxPayload)
			if err := proto.Unmarshal(er.Payload, tp); err != nil {
				t.Fatal(err)
			}
			id := tp.Header.TxId
			sig, _ := user.Sign(er.Payload)
			raw, _ := proto.Marshal(&api.Transaction{Payload: er.Payload, Signature: sig})
			wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
			sr, err := gw.Submit(wctx, &api.SubmitRequest{Transaction: raw, WaitCommit: true})
			wcancel()
			if err != nil || sr.Status != http.StatusOK || sr.GetCommit().GetCode() != api.TxValidationCode_VALID {
				t.Fatalf("Submit of a tx the orderer lost, waiting for its commit: %v %d %s %v", err, sr.GetStatus(), sr.GetMessage(), sr.GetCommit())
			}
			if m := gw.Metrics(); m.Resubmitted != 1 {
				t.Errorf("metrics %s: want 1 resubmitted", m)
			}
			if !late {
				return
			}
			// Wait for the late copy's block, then read the id's codes off the chain.
			var codes []api.TxValidationCode
			var blocks []uint64
			stream, err := gatewayClient(t, n.Peers[0].Addr).BlockEvents(ctx, &api.BlockEventsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			for len(codes) < 2 {
				ev, err := stream.Recv()
				if err != nil {
					t.Fatalf("block events: %v; tx %s seen with codes %v", err, id, codes)
				}
				for i, tid := range ev.TxIds {
					if tid == id {
						codes, blocks = append(codes, api.TxValidationCode(ev.Codes[i])), append(blocks, ev.Number)
					}
				}
			}
			if codes[0] != api.TxValidationCode_VALID || codes[1] != api.TxValidationCode_DUPLICATE_TXID {
				t.Fatalf("tx %s on the chain with codes %v in blocks %v, want VALID then DUPLICATE_TXID", id, codes, blocks)
			}
			cs, err := gw.CommitStatus(ctx, &api.CommitStatusRequest{TxId: id})
			if err != nil || cs.Code != api.TxValidationCode_VALID || cs.Block != blocks[0] || sr.Commit.Block != blocks[0] {
				t.Fatalf("commit status %v, %v; Submit's %v: want VALID in block %d, the first copy's", cs, err, sr.Commit, blocks[0])
			}
		})
	}
}
