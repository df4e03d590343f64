package orderer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/internal/gopool"
)

// Channels are the channels one orderer process orders: one Orderer per
// channel, each with its own cutter, block store, Raft group and Raft
// log, behind the process's one gRPC listener. Channels routes every call
// to its channel's Orderer and nothing else:
//
//   - Submit, SubmitBatch: by SubmitRequest.channel if set, else by the
//     channel the transaction (or config update) names (api.ChannelOf);
//     that channel's Orderer then checks the transaction in full, header
//     channel included, as it always did.
//   - Deliver: by DeliverRequest.channel.
//   - Cluster (Raft messages, forwarded transactions) and Admin: by the
//     call's ChannelHeader (OnChannel), a forwarded transaction by its own
//     bytes. Each channel's transport authenticates the caller against its
//     own channel's orderers, so one channel's members reach nothing of
//     another channel's.
//
// A call for a channel the process does not order fails with
// ErrUnknownChannel (404, codes.NotFound), naming the channel and those
// served; a call that names none, to a process that orders several,
// with ErrNoChannel (400, codes.InvalidArgument). With one channel,
// routing is what it was before Channels: every call goes to it, and its
// Orderer refuses another channel's with ErrWrongChannel.
type Channels struct {
	ids  []string // in the order given
	byID map[string]*Orderer
	srvs map[string]*server
	// admit runs a multi-channel SubmitBatch's admissions (see
	// server.admit).
	admit gopool.Pool
}

var (
	// ErrUnknownChannel: a call for a channel this process does not
	// order. Status 404.
	ErrUnknownChannel = errors.New("orderer: unknown channel")
	// ErrNoChannel: a call that names no channel, to a process that
	// orders several. Status 400.
	ErrNoChannel = errors.New("orderer: no channel named")
)

// ChannelHeader is the gRPC metadata key that names the channel of a
// Cluster or Admin call (OnChannel).
const ChannelHeader = "strand-channel"

// OnChannel returns ctx naming channel for the Cluster and Admin calls
// made with it (ConfigClient, TransferLeaderClient), which an orderer
// process that orders several channels routes by it.
func OnChannel(ctx context.Context, channel string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, ChannelHeader, channel)
}

// streamChannel is the channel an incoming call names in its
// ChannelHeader, "" if none.
func streamChannel(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(ChannelHeader); len(v) > 0 {
		return v[0]
	}
	return ""
}

// NewChannels routes to orderers, one per channel, at least one.
func NewChannels(orderers ...*Orderer) (*Channels, error) {
	if len(orderers) == 0 {
		return nil, fmt.Errorf("%w: no channel to order", ErrBadConfig)
	}
	c := &Channels{byID: map[string]*Orderer{}, srvs: map[string]*server{}}
	for _, o := range orderers {
		id := o.cfg.Channel
		if _, ok := c.byID[id]; ok {
			return nil, fmt.Errorf("%w: channel %q given twice", ErrBadConfig, id)
		}
		c.ids = append(c.ids, id)
		c.byID[id] = o
		c.srvs[id] = &server{o: o}
	}
	return c, nil
}

// IDs are the channels, in the order given to NewChannels.
func (c *Channels) IDs() []string { return c.ids }

// Get returns the orderer of channel id: with one channel, that one
// whatever id is (it refuses another channel itself); with several, the
// one named, or ErrUnknownChannel, or ErrNoChannel for "".
func (c *Channels) Get(id string) (*Orderer, error) {
	if len(c.ids) == 1 {
		return c.byID[c.ids[0]], nil
	}
	if id == "" {
		return nil, fmt.Errorf("%w: this orderer orders channels %s; name one", ErrNoChannel, strings.Join(c.ids, ", "))
	}
	o, ok := c.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w %q: this orderer orders channel(s) %s", ErrUnknownChannel, id, strings.Join(c.ids, ", "))
	}
	return o, nil
}

// grpcError is err of Get as a gRPC status.
func grpcError(err error) error {
	if errors.Is(err, ErrNoChannel) {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.NotFound, err.Error())
}

// Server is the Orderer service of every channel.
func (c *Channels) Server() api.OrdererServer { return channelsServer{c: c} }

// RegisterCluster registers the Cluster service of every channel ordered
// by Raft on s; a no-op if none is.
func (c *Channels) RegisterCluster(s grpc.ServiceRegistrar) {
	if c.anyRaft() {
		s.RegisterService(&clusterDesc, clusterRoutes{c})
	}
}

// RegisterAdmin registers the Admin service of every channel ordered by
// Raft on s; a no-op if none is.
func (c *Channels) RegisterAdmin(s grpc.ServiceRegistrar) {
	if c.anyRaft() {
		s.RegisterService(&adminDesc, adminRoutes{c})
	}
}

func (c *Channels) anyRaft() bool {
	for _, o := range c.byID {
		if o.raft != nil {
			return true
		}
	}
	return false
}

// raftOf is the Raft member of channel id, as a gRPC status error if the
// channel is unknown or not ordered by Raft here.
func (c *Channels) raftOf(id string) (*Orderer, error) {
	o, err := c.Get(id)
	if err != nil {
		return nil, grpcError(err)
	}
	if o.raft == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "%v: channel %q has a single-node orderer here", ErrNotRaft, o.cfg.Channel)
	}
	return o, nil
}

// server returns the Orderer service of the channel raw (or the request's
// routing field, if set) names.
func (c *Channels) server(routing string, raw []byte) (*server, error) {
	id := routing
	if id == "" && len(c.ids) > 1 {
		var err error
		if id, err = api.ChannelOf(raw); err != nil {
			return nil, fmt.Errorf("%w: %d bytes name no channel: %w", ErrMalformed, len(raw), err)
		}
	}
	o, err := c.Get(id)
	if err != nil {
		return nil, err
	}
	return c.srvs[o.cfg.Channel], nil
}

type channelsServer struct {
	api.UnimplementedOrdererServer
	c *Channels
}

func (cs channelsServer) Submit(ctx context.Context, req *api.SubmitRequest) (*api.SubmitResponse, error) {
	s, err := cs.c.server(req.GetChannel(), req.GetTransaction())
	if err != nil {
		return &api.SubmitResponse{Status: StatusOf(err), Message: err.Error()}, nil
	}
	return s.Submit(ctx, req)
}

// SubmitBatch routes each transaction to its channel. The peer's height
// report (pacing) goes to the channels the batch's transactions name: a
// gateway serves one channel, so its batches hold one channel's
// transactions; an empty batch, with several channels, reports nowhere.
func (cs channelsServer) SubmitBatch(ctx context.Context, req *api.SubmitBatchRequest) (*api.SubmitBatchResponse, error) {
	if len(cs.c.ids) == 1 {
		return cs.c.srvs[cs.c.ids[0]].SubmitBatch(ctx, req)
	}
	txs := req.GetTransactions()
	if len(txs) > maxBatchTxs {
		return nil, status.Errorf(codes.InvalidArgument, "orderer: a batch of %d transactions, want at most %d", len(txs), maxBatchTxs)
	}
	out := make([]*api.SubmitResponse, len(txs))
	errs := make([]error, len(txs))
	reported := map[*server]bool{}
	var wg sync.WaitGroup
	for i, raw := range txs {
		s, err := cs.c.server("", raw)
		if err != nil {
			out[i] = &api.SubmitResponse{Status: StatusOf(err), Message: err.Error()}
			continue
		}
		if !reported[s] {
			reported[s] = true
			s.o.Report(req.GetPeer(), req.GetPeerHeight())
		}
		wg.Add(1)
		cs.c.admit.Go(func() {
			defer wg.Done()
			out[i], errs[i] = s.submit(ctx, raw)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return &api.SubmitBatchResponse{Responses: out}, nil
}

func (cs channelsServer) Deliver(req *api.DeliverRequest, stream grpc.ServerStreamingServer[api.DeliverResponse]) error {
	o, err := cs.c.Get(req.GetChannel())
	if err != nil {
		return grpcError(err)
	}
	return cs.c.srvs[o.cfg.Channel].Deliver(req, stream)
}

// clusterRoutes is the Cluster service of every Raft channel.
type clusterRoutes struct{ c *Channels }

func (r clusterRoutes) stepTo(ctx context.Context) (*transport, error) {
	o, err := r.c.raftOf(streamChannel(ctx))
	if err != nil {
		return nil, err
	}
	return o.raft.tr.stepTo(ctx)
}

func (r clusterRoutes) forwardTo(raw []byte) (*transport, error) {
	id := ""
	if len(r.c.ids) > 1 {
		var err error
		if id, err = api.ChannelOf(raw); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%v: a forwarded submission of %d bytes names no channel: %v", ErrMalformed, len(raw), err)
		}
	}
	o, err := r.c.raftOf(id)
	if err != nil {
		return nil, err
	}
	return o.raft.tr, nil
}

// adminRoutes is the Admin service of every Raft channel.
type adminRoutes struct{ c *Channels }

func (r adminRoutes) adminTo(ctx context.Context) (*Orderer, error) {
	o, err := r.c.raftOf(streamChannel(ctx))
	if err != nil {
		return nil, err
	}
	return o.adminTo(ctx)
}

// clusterRouter picks the channel transport that serves a Cluster call:
// a transport serves its own channel (RegisterCluster), Channels the
// channel the call names (RegisterChannels). Its errors are gRPC
// statuses.
type clusterRouter interface {
	// stepTo: by the stream's ChannelHeader.
	stepTo(ctx context.Context) (*transport, error)
	// forwardTo: by the channel the forwarded bytes name (api.ChannelOf).
	forwardTo(raw []byte) (*transport, error)
}

// stepTo accepts a stream that names this transport's channel or none
// (an orderer that predates ChannelHeader).
func (t *transport) stepTo(ctx context.Context) (*transport, error) {
	if ch := streamChannel(ctx); ch != "" && ch != t.o.cfg.Channel {
		return nil, status.Errorf(codes.NotFound, "%v: raft stream for channel %q, this orderer orders channel %q", ErrUnknownChannel, ch, t.o.cfg.Channel)
	}
	return t, nil
}

// forwardTo is t: forwarded checks the transaction's channel itself.
func (t *transport) forwardTo([]byte) (*transport, error) { return t, nil }

// adminRouter picks the channel's orderer that serves an Admin call: an
// Orderer serves its own channel (RegisterAdmin), Channels the channel
// the call names (ChannelHeader). Its errors are gRPC statuses.
type adminRouter interface {
	adminTo(ctx context.Context) (*Orderer, error)
}

// adminTo accepts a call that names o's channel or none.
func (o *Orderer) adminTo(ctx context.Context) (*Orderer, error) {
	if ch := streamChannel(ctx); ch != "" && ch != o.cfg.Channel {
		return nil, status.Errorf(codes.NotFound, "%v %q: this orderer orders channel %q", ErrUnknownChannel, ch, o.cfg.Channel)
	}
	return o, nil
}
