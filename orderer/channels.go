package orderer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

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
//
// Channels come and go while it serves (Add, Remove: an orderer joining
// and leaving channels); each call routes by the table in force when it
// began, and a call in flight on a channel removed meanwhile gets that
// channel's ErrClosed.
type Channels struct {
	mu  sync.Mutex // serializes Add and Remove
	tab atomic.Pointer[chanTable]
	// admit runs a multi-channel SubmitBatch's admissions (see
	// server.admit).
	admit gopool.Pool
}

// chanTable is one immutable routing table.
type chanTable struct {
	ids  []string // in the order added
	byID map[string]*Orderer
	srvs map[string]*server
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
	c := &Channels{}
	t := &chanTable{byID: map[string]*Orderer{}, srvs: map[string]*server{}}
	for _, o := range orderers {
		if err := t.add(o); err != nil {
			return nil, err
		}
	}
	c.tab.Store(t)
	return c, nil
}

func (t *chanTable) add(o *Orderer) error {
	id := o.cfg.Channel
	if _, ok := t.byID[id]; ok {
		return fmt.Errorf("%w: channel %q given twice", ErrBadConfig, id)
	}
	t.ids = append(t.ids, id)
	t.byID[id] = o
	t.srvs[id] = &server{o: o}
	return nil
}

// Add routes to o's channel as well, from the next call on.
func (c *Channels) Add(o *Orderer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.tab.Load()
	t := &chanTable{ids: slices.Clone(old.ids), byID: maps.Clone(old.byID), srvs: maps.Clone(old.srvs)}
	if err := t.add(o); err != nil {
		return err
	}
	c.tab.Store(t)
	return nil
}

// Remove stops routing to channel id and returns its orderer, for the
// caller to close. Channels keeps at least one channel.
func (c *Channels) Remove(id string) (*Orderer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.tab.Load()
	o, ok := old.byID[id]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w %q: this orderer orders channel(s) %s", ErrUnknownChannel, id, strings.Join(old.ids, ", "))
	case len(old.ids) == 1:
		return nil, fmt.Errorf("%w: channel %q is the orderer's last channel; an orderer orders at least one", ErrBadConfig, id)
	}
	t := &chanTable{ids: slices.DeleteFunc(slices.Clone(old.ids), func(x string) bool { return x == id }), byID: maps.Clone(old.byID), srvs: maps.Clone(old.srvs)}
	delete(t.byID, id)
	delete(t.srvs, id)
	c.tab.Store(t)
	return o, nil
}

// IDs are the channels, in the order given to NewChannels, then added.
func (c *Channels) IDs() []string { return slices.Clone(c.tab.Load().ids) }

// Get returns the orderer of channel id: with one channel, that one
// whatever id is (it refuses another channel itself); with several, the
// one named, or ErrUnknownChannel, or ErrNoChannel for "".
func (c *Channels) Get(id string) (*Orderer, error) {
	_, o, err := c.tab.Load().get(id)
	return o, err
}

func (t *chanTable) get(id string) (*server, *Orderer, error) {
	if len(t.ids) == 1 {
		return t.srvs[t.ids[0]], t.byID[t.ids[0]], nil
	}
	if id == "" {
		return nil, nil, fmt.Errorf("%w: this orderer orders channels %s; name one", ErrNoChannel, strings.Join(t.ids, ", "))
	}
	o, ok := t.byID[id]
	if !ok {
		return nil, nil, fmt.Errorf("%w %q: this orderer orders channel(s) %s", ErrUnknownChannel, id, strings.Join(t.ids, ", "))
	}
	return t.srvs[id], o, nil
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
// by Raft on s, those added later included (a call for a channel with a
// single-node orderer is refused with FailedPrecondition).
func (c *Channels) RegisterCluster(s grpc.ServiceRegistrar) {
	s.RegisterService(&clusterDesc, clusterRoutes{c})
}

// RegisterAdmin registers the Admin service of every channel ordered by
// Raft on s, as RegisterCluster does.
func (c *Channels) RegisterAdmin(s grpc.ServiceRegistrar) {
	s.RegisterService(&adminDesc, adminRoutes{c})
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
	return c.tab.Load().server(routing, raw)
}

func (t *chanTable) server(routing string, raw []byte) (*server, error) {
	id := routing
	if id == "" && len(t.ids) > 1 {
		var err error
		if id, err = api.ChannelOf(raw); err != nil {
			return nil, fmt.Errorf("%w: %d bytes name no channel: %w", ErrMalformed, len(raw), err)
		}
	}
	s, _, err := t.get(id)
	return s, err
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
// report (pacing) goes to the batch's channel field when it names one (a
// gateway's empty, report-only batch does), else to the channels the
// batch's transactions name: a gateway serves one channel, so its batches
// hold one channel's transactions.
func (cs channelsServer) SubmitBatch(ctx context.Context, req *api.SubmitBatchRequest) (*api.SubmitBatchResponse, error) {
	t := cs.c.tab.Load()
	if len(t.ids) == 1 {
		return t.srvs[t.ids[0]].SubmitBatch(ctx, req)
	}
	txs := req.GetTransactions()
	if len(txs) > maxBatchTxs {
		return nil, status.Errorf(codes.InvalidArgument, "orderer: a batch of %d transactions, want at most %d", len(txs), maxBatchTxs)
	}
	out := make([]*api.SubmitResponse, len(txs))
	errs := make([]error, len(txs))
	reported := map[*server]bool{}
	if ch := req.GetChannel(); ch != "" { // the report's own channel
		if s, _, err := t.get(ch); err == nil {
			s.o.Report(ctx, req.GetPeer(), req.GetPeerHeight())
			for _, other := range t.srvs {
				reported[other] = true // a height of ch says nothing of the others
			}
		}
	}
	var wg sync.WaitGroup
	for i, raw := range txs {
		s, err := t.server("", raw)
		if err != nil {
			out[i] = &api.SubmitResponse{Status: StatusOf(err), Message: err.Error()}
			continue
		}
		if !reported[s] {
			reported[s] = true
			s.o.Report(ctx, req.GetPeer(), req.GetPeerHeight())
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
	s, _, err := cs.c.tab.Load().get(req.GetChannel())
	if err != nil {
		return grpcError(err)
	}
	return s.Deliver(req, stream)
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
	if len(r.c.tab.Load().ids) > 1 {
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
