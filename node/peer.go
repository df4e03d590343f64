package node

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/contract/external"
	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/internal/grpctune"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/mux"
	"github.com/strand-ledger/strand/orderer"
)

// Peer is a running peer process: the channels it serves (each a
// peerChannel: ledger, committer, endorser, gateway, and the loop that
// pulls its blocks from its ordering service) and what they share: one
// gRPC server on one listener routing every call by its channel
// (gateway.Router), the contract runtimes, the metrics endpoint, the lock
// on the data directory and the process budgets (the memory limit; the
// key-table budget, split evenly between the channels).
type Peer struct {
	base
	// Committer, State, Store (in base) and Pool are those of the peer's
	// first channel (the only one of a single-channel peer).
	Committer *committer.Committer
	State     statedb.DB
	// Pool is the endorsement pool of its gateway: its own endorser and
	// the compute nodes that joined it.
	Pool *gateway.Pool

	channels []*peerChannel // in the config's order
	router   *gateway.Router
	wasm     *wasm.Engine      // runs the channels' WebAssembly contracts (modules cached by code hash)
	ext      *external.Runtime // runs their external (gRPC) contracts
	conns    []*mux.Conn
	cancel   context.CancelFunc
}

// StartPeer starts the peer a node config describes. The returned peer
// serves until Close.
func StartPeer(cfg *NodeConfig) (_ *Peer, err error) {
	p := &Peer{}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	chs, creds, err := p.openProcess(cfg)
	if err != nil {
		return nil, err
	}
	if p.wasm, err = wasm.NewEngine(wasm.Options{CacheDir: wasmCacheDir(cfg)}); err != nil {
		return nil, err
	}
	// External contract servers see the peer's own TLS certificate, and
	// are refused if a channel revoked theirs.
	if p.ext, err = external.New(external.Options{Client: withRevocations(creds.clientTLS, p.registries), Org: cfg.Org}); err != nil {
		return nil, err
	}
	keyTables := cfg.KeyTableBytes() / int64(len(chs))
	routed := make([]*gateway.Channel, len(chs))
	for i, ch := range chs {
		c, err := p.openChannel(cfg.forChannel(cfg.ChannelFiles()[i], ch.Channel), ch, creds, keyTables)
		if err != nil {
			return nil, err
		}
		routed[i] = c.routed()
	}
	first := p.channels[0]
	p.Store, p.State, p.Committer, p.Pool = first.store, first.state, first.committer, first.pool
	if p.router, err = gateway.NewRouter(routed...); err != nil {
		return nil, err
	}
	if err := p.serve(cfg.Listen, withRevocations(creds.serverTLS, p.registries), nil, grpcServer{maxRecv: api.MaxRequestMessage, streamWindow: grpctune.ClientStreamWindow, register: func(s grpc.ServiceRegistrar) {
		api.RegisterGatewayServer(s, p.router)
		api.RegisterEndorserServer(s, p.router.Endorser())
		api.RegisterComputePoolServer(s, poolRouter{p: p})
	}}); err != nil {
		return nil, err
	}
	collectors := []prometheus.Collector{
		NewStructCollector("wasm", func() any { return p.wasm.Metrics() }),
		NewStructCollector("external", func() any { return p.ext.Metrics() }),
		NewStructCollector("tls", func() any { return p.TLSMetrics() }),
	}
	for _, c := range p.channels {
		collectors = append(collectors, c.collectors(len(p.channels) > 1)...)
	}
	if p.metrics, err = startMetrics(cfg.Metrics, cfg.Profile, cfg.Name, p.ready, p.log, collectors...); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	for _, c := range p.channels {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			c.follow(ctx, p.log)
		}()
		p.log.Info("serving channel", "channel", c.name, "height", c.committer.Height())
	}
	p.log.Info("peer started", "listen", p.Addr, "channels", p.Channels())
	return p, nil
}

// Channels are the ids of the channels the peer serves, in the config's
// order.
func (p *Peer) Channels() []string {
	ids := make([]string, len(p.channels))
	for i, c := range p.channels {
		ids[i] = c.name
	}
	return ids
}

// ready is the peer's /readyz: every channel is ready.
func (p *Peer) ready(ctx context.Context) error {
	for _, c := range p.channels {
		if err := c.ready.ready(ctx); err != nil {
			if len(p.channels) == 1 {
				return err
			}
			return fmt.Errorf("channel %s: %w", c.name, err)
		}
	}
	return nil
}

// poolRouter serves ComputePool for every channel: a compute node joins
// the pool of the channel its request names (the only one if none).
type poolRouter struct {
	api.UnimplementedComputePoolServer
	p *Peer
}

func (r poolRouter) Join(req *api.JoinRequest, stream api.ComputePool_JoinServer) error {
	ch, err := r.p.router.Pick(req.GetChannel())
	if err != nil {
		return status.Error(codes.NotFound, err.Error())
	}
	for _, c := range r.p.channels {
		if c.name == ch.Name {
			return c.poolSrv.Join(req, stream)
		}
	}
	return status.Errorf(codes.Internal, "node: channel %s is routed but has no pool", ch.Name)
}

// dial connects to another node; unary calls go over one api.Mux stream.
// peerIndex is the position of the configured peer among the channel's
// peers, in the channel file's order; 0 if it is not listed.
func peerIndex(ch *ChannelConfig, cfg *NodeConfig) int {
	i := 0
	for _, o := range ch.Orgs {
		for _, pe := range o.Peers {
			if o.ID == cfg.Org && pe.Name == cfg.Name {
				return i
			}
			i++
		}
	}
	return 0
}

func (p *Peer) dial(addr string, creds grpc.DialOption) (*mux.Conn, error) {
	conn, err := dialNode(addr, creds)
	if err != nil {
		return nil, err
	}
	p.conns = append(p.conns, conn)
	return conn, nil
}

func dialNode(addr string, creds grpc.DialOption) (*mux.Conn, error) {
	// Blocks from orderers can be far larger than gRPC's 4 MiB default.
	opts := append(grpctune.DialOptions(), creds, orderer.Redial, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(api.MaxBlockMessage)))
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("node: connecting to %s: %w", addr, err)
	}
	return mux.NewConn(cc), nil
}

// Close stops the peer: serving, following, committing, and its storage.
func (p *Peer) Close() error {
	if p.cancel != nil {
		p.cancel()
	}
	p.stopServing()
	var errs []error
	for _, c := range p.conns {
		errs = append(errs, c.Close())
	}
	for _, c := range p.channels {
		errs = append(errs, c.close())
	}
	p.Store = nil // the first channel's, closed above
	if p.wasm != nil {
		errs = append(errs, p.wasm.Close())
	}
	if p.ext != nil {
		errs = append(errs, p.ext.Close())
	}
	return p.closeRest(errs...)
}

// orderWait is how long an admitted transaction of ch may wait for its
// block when nothing is lost (gateway.Config.OrderWait): the batch timeout
// in block mode; a stream-mode orderer cuts as soon as it can.
func orderWait(ch *ChannelConfig) time.Duration {
	if b := ch.OrdererBatch(); b.Mode != orderer.ModeStream {
		return b.Timeout
	}
	return 0
}
