package node

import (
	"context"
	"fmt"
	"sync"
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
	"github.com/strand-ledger/strand/orderer/cut"
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

	cfg      *NodeConfig
	creds    *nodeCreds
	channels channelSet[*peerChannel] // the node file's, then those joined
	router   *gateway.Router
	wasm     *wasm.Engine      // runs the channels' WebAssembly contracts (modules cached by code hash)
	ext      *external.Runtime // runs their external (gRPC) contracts
	ctx      context.Context   // ends at Close: every channel's follow loop
	cancel   context.CancelFunc
	joinMu   sync.Mutex // serializes joins and leaves
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
	// The peer's endorsements come back in blocks; its committers
	// recognise them instead of checking them again (committer.Channel.Own).
	creds.signer.Remember(rememberedEndorsements)
	if p.wasm, err = wasm.NewEngine(wasm.Options{CacheDir: wasmCacheDir(cfg)}); err != nil {
		return nil, err
	}
	// External contract servers see the peer's own TLS certificate, and
	// are refused if a channel revoked theirs.
	if p.ext, err = external.New(external.Options{Client: p.trusting(creds.clientTLS), Org: cfg.Org}); err != nil {
		return nil, err
	}
	p.cfg, p.creds = cfg, creds
	p.ctx, p.cancel = context.WithCancel(context.Background())
	joined, err := cfg.JoinedChannels(chs)
	if err != nil {
		return nil, err
	}
	keyTables := cfg.KeyTableBytes() / int64(len(chs)+len(joined))
	var routed []*gateway.Channel
	for i, ch := range append(chs, joined...) {
		ccfg, isJoined := cfg.forJoined(ch.Channel), i >= len(chs)
		if !isJoined {
			ccfg = cfg.forChannel(cfg.ChannelFiles()[i], ch.Channel)
		}
		c, err := p.openChannel(ccfg, ch, creds, keyTables, isJoined)
		p.channels.add(c) // closed by Close, even half-open
		if err != nil {
			return nil, err
		}
		routed = append(routed, c.routed())
	}
	first := p.channels.list()[0]
	p.Store, p.State, p.Committer, p.Pool = first.store, first.state, first.committer, first.pool
	if p.router, err = gateway.NewRouter(routed...); err != nil {
		return nil, err
	}
	admin := &channelAdmin{org: cfg.Org, regs: p.registries, node: p, log: p.log}
	// A join that arrives once serving starts waits until every channel
	// of the start follows its orderers: it starts its own follow loop,
	// which the loop below must not start again.
	p.joinMu.Lock()
	defer p.joinMu.Unlock()
	if err := p.serve(cfg.Listen, p.trusting(creds.serverTLS), nil, grpcServer{maxRecv: api.MaxRequestMessage, streamWindow: grpctune.ClientStreamWindow, register: func(s grpc.ServiceRegistrar) {
		api.RegisterGatewayServer(s, p.router)
		api.RegisterEndorserServer(s, p.router.Endorser())
		api.RegisterComputePoolServer(s, poolRouter{p: p})
		api.RegisterChannelAdminServer(s, admin)
	}}); err != nil {
		return nil, err
	}
	collectors := []prometheus.Collector{
		NewStructCollector("wasm", func() any { return p.wasm.Metrics() }),
		NewStructCollector("external", func() any { return p.ext.Metrics() }),
		NewStructCollector("tls", func() any { return p.TLSMetrics() }),
		NewStructCollector("own_signatures", func() any { return creds.signer.MadeMetrics() }),
		&p.channels,
	}
	if p.metrics, err = startMetrics(cfg.Metrics, cfg.Profile, cfg.Name, p.ready, p.log, collectors...); err != nil {
		return nil, err
	}
	for _, c := range p.channels.list() {
		p.startFollow(c)
	}
	p.log.Info("peer started", "listen", p.Addr, "channels", p.Channels())
	return p, nil
}

// startFollow starts channel c's loop that pulls its blocks, until Close
// or until the peer leaves the channel.
func (p *Peer) startFollow(c *peerChannel) {
	ctx, cancel := context.WithCancel(p.ctx)
	c.stopFollow, c.followed = cancel, make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(c.followed)
		c.follow(ctx, p.log)
	}()
	p.log.Info("serving channel", "channel", c.name, "height", c.committer.Height(), "joined", c.joined)
}

// Channels are the ids of the channels the peer serves, in the config's
// order.
func (p *Peer) Channels() []string { return p.channels.ids() }

// ready is the peer's /readyz: every channel is ready.
func (p *Peer) ready(ctx context.Context) error {
	all := p.channels.list()
	for _, c := range all {
		if err := c.ready.ready(ctx); err != nil {
			if len(all) == 1 {
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
	ch, ctx, done, err := r.p.router.Use(stream.Context(), req.GetChannel())
	if err != nil {
		return status.Error(codes.NotFound, err.Error())
	}
	defer done() // a leave ends the stream
	if c, ok := r.p.channels.find(ch.Name); ok {
		return c.poolSrv.Join(req, gateway.Bind(stream, ctx))
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
	p.joinMu.Lock() // a join or leave under way finishes first
	defer p.joinMu.Unlock()
	var errs []error
	for _, c := range p.channels.list() {
		if c.followed != nil {
			<-c.followed // ctx is cancelled: it ends
		}
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
	if b := ch.OrdererBatch(); b.Mode != cut.ModeStream {
		return b.Timeout
	}
	return 0
}

// rememberedEndorsements is how many of its latest endorsement signatures
// a peer remembers (identity.Signer.Remember): under 1.5 MiB, and
// seconds of endorsements at thousands a second, against an endorse-to-
// commit time of tens of milliseconds. One that has left the record is
// checked in full, with the same answer.
const rememberedEndorsements = 8192
