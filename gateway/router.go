package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
)

// Sentinels of a request a Router cannot route; the refusal's message
// starts with one and names the channels the peer serves.
var (
	// ErrUnknownChannel: the request names a channel the peer does not
	// serve (status 404, gRPC NotFound).
	ErrUnknownChannel = errors.New("gateway: unknown channel")
	// ErrNoChannel: the request names no channel and the peer serves
	// several (status 400, gRPC InvalidArgument).
	ErrNoChannel = errors.New("gateway: no channel named")
	// ErrWrongChannel: a transaction sent to the gateway of another
	// channel than its header names (status 404).
	ErrWrongChannel = errors.New("gateway: transaction of another channel")
)

// Channel is what a Router serves for one channel: its gateway and the
// endorser other orgs' gateways ask.
type Channel struct {
	Name     string
	Gateway  api.GatewayServer
	Endorser api.EndorserServer
}

// Router serves the Gateway and Endorser services of a peer with one or
// more channels on one gRPC server: each call goes to the channel its
// request names (SignedProposal.channel, SubmitRequest.channel, ...), or
// to the peer's only channel when it names none (so clients from before
// channels keep working with a single-channel peer).
//
// The routing field is unsigned: it only picks the channel's gateway or
// endorser, which refuses a proposal or transaction whose signed header
// names another channel (endorser.ErrWrongChannel, Gateway.Submit). So
// nothing of one channel is readable or writable through another.
type Router struct {
	api.UnimplementedGatewayServer
	byName map[string]*Channel
	sorted []string
	names  string // for messages: "a, b, c"
	only   *Channel
}

// NewRouter routes to chs, which must have distinct, non-empty names.
func NewRouter(chs ...*Channel) (*Router, error) {
	if len(chs) == 0 {
		return nil, fmt.Errorf("%w: a router of no channel", ErrBadConfig)
	}
	r := &Router{byName: make(map[string]*Channel, len(chs))}
	names := make([]string, 0, len(chs))
	for _, c := range chs {
		switch {
		case c.Name == "" || c.Gateway == nil || c.Endorser == nil:
			return nil, fmt.Errorf("%w: channel %q needs a name, a gateway and an endorser", ErrBadConfig, c.Name)
		case r.byName[c.Name] != nil:
			return nil, fmt.Errorf("%w: channel %q listed twice", ErrBadConfig, c.Name)
		}
		r.byName[c.Name] = c
		names = append(names, c.Name)
	}
	slices.Sort(names)
	r.sorted, r.names = names, strings.Join(names, ", ")
	if len(chs) == 1 {
		r.only = chs[0]
	}
	return r, nil
}

// Pick returns the channel a request naming name goes to: that channel,
// or the only one when name is empty. The error wraps ErrUnknownChannel
// or ErrNoChannel.
func (r *Router) Pick(name string) (*Channel, error) {
	if name == "" {
		if r.only != nil {
			return r.only, nil
		}
		return nil, fmt.Errorf("%w: this peer serves channels %s; name one in the request", ErrNoChannel, r.names)
	}
	if c := r.byName[name]; c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("%w %q: this peer serves channel(s) %s", ErrUnknownChannel, name, r.names)
}

// httpStatus and grpcStatus are the statuses of a Pick error.
func httpStatus(err error) int32 {
	if errors.Is(err, ErrNoChannel) {
		return http.StatusBadRequest
	}
	return http.StatusNotFound
}

func grpcStatus(err error) error {
	code := codes.NotFound
	if errors.Is(err, ErrNoChannel) {
		code = codes.InvalidArgument
	}
	return status.Error(code, err.Error())
}

// pickProposal routes a signed proposal and fills in its channel, so
// that the gateway forwards it to other orgs' peers, which may serve
// several channels too, with the channel named.
func (r *Router) pickProposal(sp *api.SignedProposal) (*Channel, error) {
	c, err := r.Pick(sp.GetChannel())
	if err == nil && sp != nil {
		sp.Channel = c.Name
	}
	return c, err
}

func (r *Router) Evaluate(ctx context.Context, sp *api.SignedProposal) (*api.EvaluateResponse, error) {
	c, err := r.pickProposal(sp)
	if err != nil {
		return &api.EvaluateResponse{Status: httpStatus(err), Message: err.Error()}, nil
	}
	return c.Gateway.Evaluate(ctx, sp)
}

func (r *Router) Endorse(ctx context.Context, sp *api.SignedProposal) (*api.EndorseResponse, error) {
	c, err := r.pickProposal(sp)
	if err != nil {
		return &api.EndorseResponse{Status: httpStatus(err), Message: err.Error()}, nil
	}
	return c.Gateway.Endorse(ctx, sp)
}

func (r *Router) Submit(ctx context.Context, req *api.SubmitRequest) (*api.SubmitResponse, error) {
	c, err := r.Pick(req.GetChannel())
	if err != nil {
		return &api.SubmitResponse{Status: httpStatus(err), Message: err.Error()}, nil
	}
	return c.Gateway.Submit(ctx, req)
}

func (r *Router) CommitStatus(ctx context.Context, req *api.CommitStatusRequest) (*api.CommitStatusResponse, error) {
	c, err := r.Pick(req.GetChannel())
	if err != nil {
		return nil, grpcStatus(err)
	}
	return c.Gateway.CommitStatus(ctx, req)
}

func (r *Router) BlockEvents(req *api.BlockEventsRequest, stream grpc.ServerStreamingServer[api.BlockEvent]) error {
	c, err := r.Pick(req.GetChannel())
	if err != nil {
		return grpcStatus(err)
	}
	return c.Gateway.BlockEvents(req, stream)
}

// Channels lists the channels the peer serves, sorted.
func (r *Router) Channels(context.Context, *api.ChannelsRequest) (*api.ChannelsResponse, error) {
	return &api.ChannelsResponse{Channels: slices.Clone(r.sorted)}, nil
}

// Endorser returns the router's Endorser service (its methods would
// clash with the Gateway's if the Router served both itself).
func (r *Router) Endorser() api.EndorserServer { return routedEndorser{r: r} }

type routedEndorser struct {
	api.UnimplementedEndorserServer
	r *Router
}

func (e routedEndorser) ProcessProposal(ctx context.Context, sp *api.SignedProposal) (*api.ProposalResponse, error) {
	c, err := e.r.pickProposal(sp)
	if err != nil {
		return &api.ProposalResponse{Status: httpStatus(err), Message: err.Error()}, nil
	}
	return c.Endorser.ProcessProposal(ctx, sp)
}

// ProcessProposals passes a batch whose proposals all route to one
// channel on whole (a gateway's batches do: it batches per channel);
// a mixed batch is answered proposal by proposal.
func (e routedEndorser) ProcessProposals(ctx context.Context, b *api.ProposalBatch) (*api.ProposalBatchResponse, error) {
	sps := b.GetProposals()
	var one *Channel
	for _, sp := range sps {
		c, err := e.r.Pick(sp.GetChannel())
		if err != nil || one != nil && c != one {
			one = nil
			break
		}
		one = c
	}
	if one != nil {
		return one.Endorser.ProcessProposals(ctx, b)
	}
	if len(sps) > maxBatchProposals {
		return nil, status.Errorf(codes.InvalidArgument, "gateway: a batch of %d proposals, want at most %d", len(sps), maxBatchProposals)
	}
	out := make([]*api.ProposalResponse, len(sps))
	for i, sp := range sps {
		var err error
		if out[i], err = e.ProcessProposal(ctx, sp); err != nil {
			return nil, err
		}
	}
	return &api.ProposalBatchResponse{Responses: out}, nil
}
