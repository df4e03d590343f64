package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/contract/external"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/grpctune"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/memnode"
	"github.com/strand-ledger/strand/mux"
	"github.com/strand-ledger/strand/orderer"
)

// Peer is a running peer: ledger, committer, endorser, gateway, and the
// loop that pulls blocks from the ordering service.
type Peer struct {
	base
	Committer *committer.Committer
	State     statedb.DB
	// Pool is the endorsement pool of its gateway: its own endorser and
	// the compute nodes that joined it.
	Pool *gateway.Pool

	channel string
	wasm    *wasm.Engine      // runs the channel's WebAssembly contracts
	ext     *external.Runtime // runs its external (gRPC) contracts
	repairs Repairs           // written before serving starts, read by metrics
	ready   *peerReadiness
	conns   []*mux.Conn
	remotes *remoteEndorsers // the other orgs' peers its gateway asks
	cancel  context.CancelFunc
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
	ch, creds, err := p.open(cfg)
	if err != nil {
		return nil, err
	}
	p.channel = ch.Channel
	opts, err := cfg.CommitterOptions()
	if err != nil {
		return nil, err
	}
	comCh, err := ch.Committer()
	if err != nil {
		return nil, err
	}
	comCh.Registry.SetKeyTableLimit(cfg.KeyTableBytes())
	serverTLS, clientTLS := WithRevocation(creds.serverTLS, comCh.Registry), WithRevocation(creds.clientTLS, comCh.Registry)
	toOrderer := grpc.WithTransportCredentials(credentials.NewTLS(ExpectServer(clientTLS, identity.RoleOrderer)))
	toPeer := grpc.WithTransportCredentials(credentials.NewTLS(ExpectServer(clientTLS, identity.RolePeer)))
	// Every peer prefers a different orderer (its position among the
	// channel's peers, modulo the orderers), so that submissions and block
	// streams spread over a Raft cluster; the rest follow as failovers.
	// The set starts from the channel file and follows config blocks
	// (ordererBook), those already stored first.
	eps := ch.Orderers()
	book := newOrdererBook(ch.Channel, comCh.Registry, peerIndex(ch, cfg)%len(eps), func(name, addr string) (api.OrdererClient, error) {
		conn, err := p.dial(addr, toOrderer)
		if err != nil {
			return nil, err
		}
		// Concurrent submissions go to the orderer in batches.
		return gateway.BatchSubmits(named(name, api.NewOrdererClient(conn))), nil
	}, p.log)
	if err := book.set(eps); err != nil {
		return nil, err
	}
	if p.State, err = openState(cfg, p.Store.Height(), p.Store.Base().Height, p.Store.Damaged(), &p.repairs, p.log); err != nil {
		return nil, err
	}
	if err := p.repairBlocks(comCh, book.Orderers, &p.repairs); err != nil {
		return nil, err
	}
	if p.Committer, err = committer.New(comCh, p.Store, p.State, opts, p.log); err != nil {
		return nil, err
	}
	signer := creds.signer
	if p.wasm, err = wasm.NewEngine(wasm.Options{}); err != nil {
		return nil, err
	}
	// External contract servers see the peer's own TLS certificate.
	if p.ext, err = external.New(external.Options{Client: clientTLS, Org: cfg.Org}); err != nil {
		return nil, err
	}
	genesis, err := channelContracts(ch, cfg.builtins(), p.wasm, p.ext)
	if err != nil {
		return nil, err
	}
	byName := map[string]ContractConfig{}
	for _, c := range ch.Contracts {
		byName[c.Name] = c
	}
	// installed is the table the endorser and gateway run now, which
	// `_lifecycle` answers from: the committer's newer table is in force
	// only once installed (definitionInstaller).
	installed := new(atomic.Pointer[lifecycle.Table])
	defs := p.Committer.Definitions()
	installed.Store(defs)
	loader := &contractLoader{channel: ch.Channel, builtins: cfg.builtins(), engine: p.wasm, external: p.ext, state: p.Committer.State(), genesis: genesis, log: p.log,
		system: lifecycleContract{defs: installed.Load, genesis: byName, revocations: comCh.Registry.Revocations}}
	if cfg.Join != "" { // a peer of an org a membership update adds: see NodeConfig.Join
		d, err := cfg.JoinOrg(ch)
		if err == nil {
			err = comCh.Registry.AddJoiningOrg(d)
		}
		if err != nil && !errors.Is(err, identity.ErrAlreadyMember) { // already known: the chain brought it
			return nil, err
		}
	}
	contracts, seqs := loader.load(defs)
	e, err := endorser.New(endorser.Config{
		Channel: ch.Channel, Registry: comCh.Registry, Signer: signer, Contracts: contracts, Sequences: seqs,
		State: p.Committer.State(), Seen: endorser.SeenIn(p.Store.TxLocation), Height: p.Committer.Height,
	})
	if err != nil {
		return nil, err
	}
	book.replay(p.Store)
	orderers := book.Orderers()
	if p.remotes, err = newRemoteEndorsers(ch, cfg.Org, comCh.Registry, toPeer, p.log); err != nil {
		return nil, err
	}
	pool := gateway.NewPool(cfg.Name, gateway.LocalEndorser(e), cfg.Compute.PrimaryMode())
	p.Pool = pool
	gw, err := gateway.New(gateway.Config{
		Channel: ch.Channel, Format: comCh.Format, Readers: ch.ReadRule(), Registry: comCh.Registry, LocalOrg: cfg.Org, Peer: cfg.Name, Local: e, Pool: pool, Remote: p.remotes.current(), Policies: defs.Policies(),
		Orderers: orderers, OrderersNow: book.Orderers, Ledger: gateway.PeerLedger(p.Store, p.Committer), Blocks: p.Store,
		ReportHeights: ch.OrdererBatch().Mode == orderer.ModeStream,
		OrderWait:     orderWait(ch),
	})
	if err != nil {
		return nil, err
	}
	inst := &definitionInstaller{last: defs, installed: installed, defs: p.Committer.Definitions, loader: loader, e: e, gw: gw, log: p.log}
	p.Committer.OnDefinitions(inst.install)
	inst.install() // any definition committed since defs was read
	p.remotes.follow(gw.SetRemote)
	p.Committer.OnMembers(p.remotes.update)
	p.remotes.update() // any membership committed since the remotes were dialled
	if err := p.serve(cfg.Listen, serverTLS, nil, grpcServer{maxRecv: api.MaxRequestMessage, streamWindow: grpctune.ClientStreamWindow, register: func(s grpc.ServiceRegistrar) {
		api.RegisterGatewayServer(s, gw)
		api.RegisterEndorserServer(s, gateway.NewEndorserServer(e))
		api.RegisterComputePoolServer(s, &poolServer{pool: pool, reg: comCh.Registry, org: cfg.Org, primary: cfg.Name,
			clientTLS: clientTLS, height: p.Committer.Height, log: p.log})
	}}); err != nil {
		return nil, err
	}
	p.ready = &peerReadiness{channel: ch.Channel, next: p.Committer.Next, orderers: book.Orderers}
	collectors := []prometheus.Collector{
		NewCommitterCollector(p.Committer),
		NewStructCollector("endorser", func() any { return e.Metrics() }),
		NewStructCollector("gateway", func() any { return gw.Metrics() }),
		NewStructCollector("pool", func() any { return pool.Metrics() }),
		NewStructCollector("blockstore", func() any { return p.Store.Stats() }),
		NewStructCollector("repair", func() any { return p.repairs }),
		NewStructCollector("wasm", func() any { return p.wasm.Metrics() }),
		NewStructCollector("external", func() any { return p.ext.Metrics() }),
		NewStructCollector("key_tables", func() any { return comCh.Registry.KeyTableMetrics() }),
		NewStructCollector("tls", func() any { return p.TLSMetrics() }),
	}
	if mc, ok := p.State.(*memnode.Client); ok { // cache hits, remote reads, call latency
		collectors = append(collectors, NewStructCollector("memnode_client", func() any { return mc.Metrics() }))
	}
	if p.metrics, err = startMetrics(cfg.Metrics, cfg.Profile, cfg.Name, p.ready.ready, p.log, collectors...); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := Follow(ctx, book.Orderers, ch.Channel, p.Committer, DefaultStallAfter, p.log, book.observe); err != nil && !errors.Is(err, context.Canceled) {
			p.ready.stopped.Store(&err)
			p.log.Error("following the ordering service stopped", "err", err)
		}
	}()
	p.log.Info("peer started", "listen", p.Addr, "height", p.Committer.Height(), "channel", ch.Channel)
	return p, nil
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
	if p.remotes != nil {
		p.remotes.close()
	}
	if p.Committer != nil {
		if err := p.Committer.Close(); err != nil && !errors.Is(err, committer.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if p.State != nil {
		errs = append(errs, p.State.Close())
	}
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
