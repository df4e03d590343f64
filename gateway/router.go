package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
//
// Channels come and go while the router serves (Add, Remove: a peer
// joining and leaving channels). Remove returns once no call is in
// flight on the channel: calls that wait on it (Submit, CommitStatus,
// BlockEvents, a compute node's Join) see their context cancelled, and
// a call that arrives after Remove began is refused as for an unknown
// channel. So the caller may close the channel's ledger when Remove
// returns.
type Router struct {
	api.UnimplementedGatewayServer
	mu  sync.Mutex // serializes Add and Remove
	tab atomic.Pointer[routes]
}

// routes is one immutable routing table.
type routes struct {
	byName map[string]*routed
	sorted []string
	names  string // for messages: "a, b, c"
	only   *routed
}

// routed is a channel in a routing table and the calls in flight on it.
type routed struct {
	*Channel
	refs   atomic.Int64
	ctx    context.Context // cancelled when Remove begins
	cancel context.CancelFunc
}

// NewRouter routes to chs, which must have distinct, non-empty names.
func NewRouter(chs ...*Channel) (*Router, error) {
	if len(chs) == 0 {
		return nil, fmt.Errorf("%w: a router of no channel", ErrBadConfig)
	}
	r := &Router{}
	t := &routes{byName: map[string]*routed{}}
	for _, c := range chs {
		if err := t.check(c); err != nil {
			return nil, err
		}
		t.byName[c.Name] = newRouted(c)
	}
	r.tab.Store(t.index())
	return r, nil
}

func newRouted(c *Channel) *routed {
	ctx, cancel := context.WithCancel(context.Background())
	return &routed{Channel: c, ctx: ctx, cancel: cancel}
}

// check refuses a channel that cannot join t.
func (t *routes) check(c *Channel) error {
	switch {
	case c.Name == "" || c.Gateway == nil || c.Endorser == nil:
		return fmt.Errorf("%w: channel %q needs a name, a gateway and an endorser", ErrBadConfig, c.Name)
	case t.byName[c.Name] != nil:
		return fmt.Errorf("%w: channel %q listed twice", ErrBadConfig, c.Name)
	}
	return nil
}

// index fills in t's names and only channel from byName.
func (t *routes) index() *routes {
	t.sorted = make([]string, 0, len(t.byName))
	for name := range t.byName {
		t.sorted = append(t.sorted, name)
	}
	slices.Sort(t.sorted)
	t.names = strings.Join(t.sorted, ", ")
	t.only = nil
	if len(t.byName) == 1 {
		t.only = t.byName[t.sorted[0]]
	}
	return t
}

// Add routes to c as well, from the next call on.
func (r *Router) Add(c *Channel) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.tab.Load()
	if err := old.check(c); err != nil {
		return err
	}
	t := &routes{byName: maps.Clone(old.byName)}
	t.byName[c.Name] = newRouted(c)
	r.tab.Store(t.index())
	return nil
}

// Remove stops routing to channel name and returns once none of its
// calls is in flight (or ctx ends, with ctx's error: the channel is no
// longer routed, but calls may still be running on it). A router keeps
// at least one channel.
func (r *Router) Remove(ctx context.Context, name string) error {
	r.mu.Lock()
	old := r.tab.Load()
	c := old.byName[name]
	switch {
	case c == nil:
		r.mu.Unlock()
		return fmt.Errorf("%w %q: this peer serves channel(s) %s", ErrUnknownChannel, name, old.names)
	case len(old.byName) == 1:
		r.mu.Unlock()
		return fmt.Errorf("%w: channel %q is the peer's last channel; a peer serves at least one", ErrBadConfig, name)
	}
	t := &routes{byName: maps.Clone(old.byName)}
	delete(t.byName, name)
	r.tab.Store(t.index())
	r.mu.Unlock()
	c.cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for c.refs.Load() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("gateway: channel %q: %d calls still in flight: %w", name, c.refs.Load(), ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// Pick returns the channel a request naming name goes to: that channel,
// or the only one when name is empty. The error wraps ErrUnknownChannel
// or ErrNoChannel. A channel Remove takes away while its caller uses it
// is closed under it: callers that use the channel call Use.
func (r *Router) Pick(name string) (*Channel, error) {
	c, err := r.tab.Load().pick(name)
	if err != nil {
		return nil, err
	}
	return c.Channel, nil
}

// Use is Pick for a call that uses the channel: until done, Remove waits
// for it. ctx is the call's context, cancelled too when Remove begins.
func (r *Router) Use(ctx context.Context, name string) (_ *Channel, _ context.Context, done func(), err error) {
	c, err := r.acquire(name)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	return c.Channel, ctx, func() { stop(); cancel(); c.refs.Add(-1) }, nil
}

// acquire picks channel name and counts a call in flight on it, which
// the caller ends with c.refs.Add(-1).
func (r *Router) acquire(name string) (*routed, error) {
	t := r.tab.Load()
	c, err := t.pick(name)
	if err != nil {
		return nil, err
	}
	c.refs.Add(1)
	if c.ctx.Err() != nil { // Remove began: it may not wait for this call
		c.refs.Add(-1)
		return nil, fmt.Errorf("%w %q: the peer is leaving it", ErrUnknownChannel, name)
	}
	return c, nil
}

func (t *routes) pick(name string) (*routed, error) {
	if name == "" {
		if t.only != nil {
			return t.only, nil
		}
		return nil, fmt.Errorf("%w: this peer serves channels %s; name one in the request", ErrNoChannel, t.names)
	}
	if c := t.byName[name]; c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("%w %q: this peer serves channel(s) %s", ErrUnknownChannel, name, t.names)
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
// several channels too, with the channel named. The caller ends the
// call with c.refs.Add(-1).
func (r *Router) pickProposal(sp *api.SignedProposal) (*routed, error) {
	c, err := r.acquire(sp.GetChannel())
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
	defer c.refs.Add(-1)
	return c.Gateway.Evaluate(ctx, sp)
}

func (r *Router) Endorse(ctx context.Context, sp *api.SignedProposal) (*api.EndorseResponse, error) {
	c, err := r.pickProposal(sp)
	if err != nil {
		return &api.EndorseResponse{Status: httpStatus(err), Message: err.Error()}, nil
	}
	defer c.refs.Add(-1)
	return c.Gateway.Endorse(ctx, sp)
}

func (r *Router) Submit(ctx context.Context, req *api.SubmitRequest) (*api.SubmitResponse, error) {
	c, ctx, done, err := r.Use(ctx, req.GetChannel())
	if err != nil {
		return &api.SubmitResponse{Status: httpStatus(err), Message: err.Error()}, nil
	}
	defer done()
	return c.Gateway.Submit(ctx, req)
}

func (r *Router) CommitStatus(ctx context.Context, req *api.CommitStatusRequest) (*api.CommitStatusResponse, error) {
	c, ctx, done, err := r.Use(ctx, req.GetChannel())
	if err != nil {
		return nil, grpcStatus(err)
	}
	defer done()
	return c.Gateway.CommitStatus(ctx, req)
}

func (r *Router) BlockEvents(req *api.BlockEventsRequest, stream grpc.ServerStreamingServer[api.BlockEvent]) error {
	c, ctx, done, err := r.Use(stream.Context(), req.GetChannel())
	if err != nil {
		return grpcStatus(err)
	}
	defer done()
	return c.Gateway.BlockEvents(req, boundStream[api.BlockEvent]{stream, ctx})
}

// boundStream is a server stream whose context is another one (Use's).
type boundStream[T any] struct {
	grpc.ServerStreamingServer[T]
	ctx context.Context
}

func (s boundStream[T]) Context() context.Context { return s.ctx }

// Bind returns stream with context ctx (for a stream served through Use).
func Bind[T any](stream grpc.ServerStreamingServer[T], ctx context.Context) grpc.ServerStreamingServer[T] {
	return boundStream[T]{stream, ctx}
}

// Channels lists the channels the peer serves, sorted.
func (r *Router) Channels(context.Context, *api.ChannelsRequest) (*api.ChannelsResponse, error) {
	return &api.ChannelsResponse{Channels: slices.Clone(r.tab.Load().sorted)}, nil
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
	defer c.refs.Add(-1)
	return c.Endorser.ProcessProposal(ctx, sp)
}

// ProcessProposals passes a batch whose proposals all route to one
// channel on whole (a gateway's batches do: it batches per channel);
// a mixed batch is answered proposal by proposal.
func (e routedEndorser) ProcessProposals(ctx context.Context, b *api.ProposalBatch) (*api.ProposalBatchResponse, error) {
	sps := b.GetProposals()
	t := e.r.tab.Load()
	var one *routed
	for _, sp := range sps {
		c, err := t.pick(sp.GetChannel())
		if err != nil || one != nil && c != one {
			one = nil
			break
		}
		one = c
	}
	if one != nil {
		if c, err := e.r.acquire(one.Name); err == nil && c == one {
			defer c.refs.Add(-1)
			return one.Endorser.ProcessProposals(ctx, b)
		} else if err == nil {
			c.refs.Add(-1)
		}
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
