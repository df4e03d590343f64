package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
)

// echoEndorser answers each proposal with its own bytes as the message;
// without batch, it has no ProcessProposals (Unimplemented).
type echoEndorser struct {
	api.UnimplementedEndorserServer
	batch bool
}

func (echoEndorser) ProcessProposal(_ context.Context, sp *api.SignedProposal) (*api.ProposalResponse, error) {
	return &api.ProposalResponse{Status: 200, Message: string(sp.GetProposal())}, nil
}

func (e echoEndorser) ProcessProposals(ctx context.Context, b *api.ProposalBatch) (*api.ProposalBatchResponse, error) {
	if !e.batch {
		return e.UnimplementedEndorserServer.ProcessProposals(ctx, b)
	}
	out := &api.ProposalBatchResponse{}
	for _, sp := range b.GetProposals() {
		r, _ := e.ProcessProposal(ctx, sp)
		out.Responses = append(out.Responses, r)
	}
	return out, nil
}

// While one proposal is in flight, the proposals that arrive go to the
// peer as one ProcessProposals, each caller getting its own answer; a
// peer without ProcessProposals gets them one by one from then on.
func TestBatchProposals(t *testing.T) {
	for _, batch := range []bool{true, false} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			addr := serve(t, func(s *grpc.Server) { api.RegisterEndorserServer(s, echoEndorser{batch: batch}) })
			log := &callLog{hold: make(chan struct{})}
			cc := dial(t, addr, grpc.WithUnaryInterceptor(log.intercept))
			b := gateway.BatchProposals(gateway.NamedEndorser("peer0.Org2", api.NewEndorserClient(cc)))
			if s := b.(fmt.Stringer).String(); s != "peer0.Org2" {
				t.Errorf("String() = %q, want the wrapped client's name", s)
			}
			const n = 20
			errs := make(chan error, n+1)
			var wg sync.WaitGroup
			ask := func(i int) {
				defer wg.Done()
				want := fmt.Sprint("proposal ", i)
				r, err := b.ProcessProposal(context.Background(), &api.SignedProposal{Proposal: []byte(want)})
				if err == nil && r.GetMessage() != want {
					err = fmt.Errorf("answered %q", r.GetMessage())
				}
				if err != nil {
					errs <- fmt.Errorf("proposal %d: %w", i, err)
				}
			}
			wg.Add(1)
			go ask(0) // held in flight
			for len(log.calls()) == 0 {
				time.Sleep(time.Millisecond)
			}
			for i := 1; i < n; i++ {
				wg.Add(1)
				go ask(i)
			}
			q := b.(interface{ Queued() int })
			for deadline := time.Now().Add(30 * time.Second); q.Queued() < n-1; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d proposals queued, want %d", q.Queued(), n-1)
				}
			}
			close(log.hold)
			wg.Wait()
			wg.Add(1)
			ask(n) // after the batch: singly without ProcessProposals
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			calls := log.calls()
			const one, many = "/strand.api.Endorser/ProcessProposal", "/strand.api.Endorser/ProcessProposals"
			switch {
			case batch && (len(calls) != 3 || calls[0] != one || calls[1] != many || calls[2] != one):
				t.Errorf("calls %v: want one alone, one batch of %d, one alone", calls, n-1)
			case !batch && (len(calls) != n+2 || calls[1] != many):
				t.Errorf("%d calls %v: want one alone, a refused batch, then %d alone", len(calls), calls, n)
			}
		})
	}
}

// FuzzProcessProposals feeds arbitrary ProposalBatch bytes to a peer's
// endorser service: every proposal gets an answer of its own, in order,
// and the peer carries on.
func FuzzProcessProposals(f *testing.F) {
	net := testnet.Start(f, testnet.Options{})
	user := net.Issue(f, "Org1", "user", identity.RoleClient)
	good := proposal(f, user, smallbank.Name, "create_account", "a", "A", "1", "1")
	for _, b := range []*api.ProposalBatch{
		{Proposals: []*api.SignedProposal{good, proposal(f, user, smallbank.Name, "query", "a")}},
		{Proposals: []*api.SignedProposal{good, good, {}, {Proposal: []byte{0x0a, 0x02, 0x0a, 0x00}}}},
		{},
	} {
		raw, _ := proto.Marshal(b)
		f.Add(raw)
	}
	f.Add([]byte{0x0a, 0xff})
	srv := gateway.NewEndorserServer(net.Peers[1].Endorser)
	f.Fuzz(func(t *testing.T, data []byte) {
		b := new(api.ProposalBatch)
		if proto.Unmarshal(data, b) != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := srv.ProcessProposals(ctx, b)
		if err != nil {
			t.Fatalf("ProcessProposals of %d: %v", len(b.Proposals), err)
		}
		if len(r.Responses) != len(b.Proposals) {
			t.Fatalf("%d answers to %d proposals", len(r.Responses), len(b.Proposals))
		}
		for i, resp := range r.Responses {
			if resp == nil || resp.Status != http.StatusOK && resp.Message == "" {
				t.Fatalf("proposal %d: answer %v", i, resp)
			}
		}
	})
}

// A batch over the bound is refused as a whole, saying the bound.
func TestProcessProposalsTooMany(t *testing.T) {
	b := &api.ProposalBatch{Proposals: make([]*api.SignedProposal, 4097)}
	_, err := gateway.NewEndorserServer(nil).ProcessProposals(context.Background(), b)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "4097 proposals, want at most 4096") {
		t.Fatalf("err %v, want InvalidArgument naming the count and the bound", err)
	}
}
