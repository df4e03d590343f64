package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/gateway"
)

// stub answers every call with its channel's name.
type stub struct {
	api.UnimplementedGatewayServer
	api.UnimplementedEndorserServer
	name string
}

func (s stub) Evaluate(context.Context, *api.SignedProposal) (*api.EvaluateResponse, error) {
	return &api.EvaluateResponse{Status: http.StatusOK, Result: []byte(s.name)}, nil
}

func (s stub) ProcessProposals(_ context.Context, b *api.ProposalBatch) (*api.ProposalBatchResponse, error) {
	out := &api.ProposalBatchResponse{}
	for range b.Proposals {
		out.Responses = append(out.Responses, &api.ProposalResponse{Status: http.StatusOK, Message: "batch " + s.name})
	}
	return out, nil
}

func (s stub) ProcessProposal(context.Context, *api.SignedProposal) (*api.ProposalResponse, error) {
	return &api.ProposalResponse{Status: http.StatusOK, Message: "one " + s.name}, nil
}

func router(t *testing.T, names ...string) *gateway.Router {
	t.Helper()
	var chs []*gateway.Channel
	for _, n := range names {
		chs = append(chs, &gateway.Channel{Name: n, Gateway: stub{name: n}, Endorser: stub{name: n}})
	}
	r, err := gateway.NewRouter(chs...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRouterPick(t *testing.T) {
	one, two := router(t, "a"), router(t, "b", "a")
	for _, tc := range []struct {
		r          *gateway.Router
		name, want string
		err        error
		status     int32
	}{
		{one, "", "a", nil, 200},
		{one, "a", "a", nil, 200},
		{one, "b", "", gateway.ErrUnknownChannel, 404},
		{two, "b", "b", nil, 200},
		{two, "", "", gateway.ErrNoChannel, 400},
		{two, "c", "", gateway.ErrUnknownChannel, 404},
	} {
		sp := &api.SignedProposal{Channel: tc.name}
		r, err := tc.r.Evaluate(context.Background(), sp)
		if err != nil || r.Status != tc.status || string(r.Result) != tc.want {
			t.Errorf("Evaluate routed to %q: %v %v, want status %d from %q", tc.name, r, err, tc.status, tc.want)
		}
		if _, err := tc.r.Pick(tc.name); !errors.Is(err, tc.err) {
			t.Errorf("Pick(%q): %v, want %v", tc.name, err, tc.err)
		}
		if tc.err == nil && sp.Channel != tc.want {
			t.Errorf("routed proposal names channel %q, want %q (forwarded to other orgs' peers)", sp.Channel, tc.want)
		}
	}
	if _, err := gateway.NewRouter(&gateway.Channel{Name: "a", Gateway: stub{}, Endorser: stub{}}, &gateway.Channel{Name: "a", Gateway: stub{}, Endorser: stub{}}); !errors.Is(err, gateway.ErrBadConfig) {
		t.Errorf("two channels a: %v", err)
	}
}

// TestRouterBatch: a batch of one channel's proposals goes whole to that
// channel's endorser; a mixed one is answered proposal by proposal, each
// by its own channel (or refused).
func TestRouterBatch(t *testing.T) {
	e := router(t, "a", "b").Endorser()
	r, err := e.ProcessProposals(context.Background(), &api.ProposalBatch{Proposals: []*api.SignedProposal{{Channel: "b"}, {Channel: "b"}}})
	if err != nil || len(r.Responses) != 2 || r.Responses[1].Message != "batch b" {
		t.Fatalf("batch of b: %v %v", r, err)
	}
	r, err = e.ProcessProposals(context.Background(), &api.ProposalBatch{Proposals: []*api.SignedProposal{{Channel: "a"}, {Channel: "b"}, {Channel: "x"}}})
	if err != nil || len(r.Responses) != 3 || r.Responses[0].Message != "one a" || r.Responses[1].Message != "one b" || r.Responses[2].Status != 404 {
		t.Fatalf("mixed batch: %v %v", r, err)
	}
}

// blocker's Submit waits for its context to end, as a Submit that waits
// for its commit does; started is closed when it began.
type blocker struct {
	stub
	started chan struct{}
}

func (b blocker) Submit(ctx context.Context, _ *api.SubmitRequest) (*api.SubmitResponse, error) {
	close(b.started)
	<-ctx.Done()
	return &api.SubmitResponse{Status: http.StatusServiceUnavailable, Message: ctx.Err().Error()}, nil
}

// TestRouterAddRemove: a channel added is routed from the next call; one
// removed is refused by name, and Remove returns only after the calls in
// flight on it ended (their waits cancelled), so the peer may close its
// ledger then.
func TestRouterAddRemove(t *testing.T) {
	r := router(t, "a")
	b := blocker{stub: stub{name: "b"}, started: make(chan struct{})}
	if err := r.Add(&gateway.Channel{Name: "b", Gateway: b, Endorser: b}); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(&gateway.Channel{Name: "b", Gateway: b, Endorser: b}); !errors.Is(err, gateway.ErrBadConfig) {
		t.Errorf("Add b twice: %v, want ErrBadConfig", err)
	}
	if r, _ := r.Evaluate(context.Background(), &api.SignedProposal{Channel: "b"}); string(r.GetResult()) != "b" {
		t.Errorf("Evaluate on b after Add: %v", r)
	}
	done := make(chan *api.SubmitResponse)
	go func() {
		resp, _ := r.Submit(context.Background(), &api.SubmitRequest{Channel: "b"})
		done <- resp
	}()
	<-b.started
	if err := r.Remove(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-done: // Remove returned after it
		if resp.Status != http.StatusServiceUnavailable {
			t.Errorf("the Submit in flight: %v, want its wait cancelled", resp)
		}
	default:
		t.Fatal("Remove returned while a Submit on the channel was in flight")
	}
	if resp, _ := r.Evaluate(context.Background(), &api.SignedProposal{Channel: "b"}); resp.Status != http.StatusNotFound {
		t.Errorf("Evaluate on b after Remove: %v, want 404", resp)
	}
	if resp, _ := r.Evaluate(context.Background(), &api.SignedProposal{}); string(resp.GetResult()) != "a" {
		t.Errorf("Evaluate naming no channel, with a alone left: %v, want a's answer", resp)
	}
	if err := r.Remove(context.Background(), "a"); !errors.Is(err, gateway.ErrBadConfig) {
		t.Errorf("Remove the last channel: %v, want ErrBadConfig", err)
	}
	if err := r.Remove(context.Background(), "b"); !errors.Is(err, gateway.ErrUnknownChannel) {
		t.Errorf("Remove b twice: %v, want ErrUnknownChannel", err)
	}
}
