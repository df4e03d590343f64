package node

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/memnode"
	"github.com/strand-ledger/strand/mux"
	"github.com/strand-ledger/strand/orderer/cut"
)

// peerChannel is one channel a peer serves: its ledger (block store and
// state database, in the channel's data directory), committer, contract
// loader, endorser and gateway, its orderer connections, and the loop that
// follows its ordering service. Nothing in it is shared with another
// channel; what the peer shares (the gRPC server, the contract runtimes,
// the metrics endpoint, the data directory lock) is the Peer's.
type peerChannel struct {
	name      string
	store     *ledger.BlockStore
	state     statedb.DB
	committer *committer.Committer
	endorser  *endorser.Endorser
	gw        *gateway.Gateway
	pool      *gateway.Pool
	poolSrv   *poolServer
	reg       *identity.Registry
	remotes   *remoteEndorsers // the other orgs' peers its gateway asks
	book      *ordererBook
	ready     *peerReadiness
	repairs   Repairs     // written before serving starts, read by metrics
	conns     []*mux.Conn // to its orderers
	joined    bool        // at runtime (ChannelAdmin.Join), not in the node file
	hash      string      // of its genesis document
	trust     *verifier   // a joined channel's CAs, for the peer's TLS
	// stopFollow ends the follow loop, which closes followed.
	stopFollow context.CancelFunc
	followed   chan struct{}
}

func (c *peerChannel) id() string { return c.name }

// openChannel opens channel ch of the peer: cfg is the node's config for
// that channel (NodeConfig.forChannel, forJoined), keyTables its share of
// the node's key-table budget, joined whether the peer joined it at
// runtime. On error it returns the channel half-open too, for the caller
// to close.
func (p *Peer) openChannel(cfg *NodeConfig, ch *ChannelConfig, creds *nodeCreds, keyTables int64, joined bool) (c *peerChannel, err error) {
	c = &peerChannel{name: ch.Channel, joined: joined, hash: ch.Hash()}
	log := p.log.With("channel", ch.Channel)
	if err := cfg.CheckChannel(ch); err != nil {
		return c, err
	}
	// Each channel's client side trusts its own channel's CAs only.
	_, chClientTLS, err := LoadTLS(cfg, ch)
	if err != nil {
		return c, err
	}
	if joined {
		if c.trust, err = p.trustJoined(ch); err != nil {
			return c, err
		}
	}
	if c.store, err = ledger.OpenBlockStore(filepath.Join(cfg.DataDir, "blocks"), ledger.Options{Logger: log}); err != nil {
		return c, err
	}
	opts, err := cfg.CommitterOptions()
	if err != nil {
		return c, err
	}
	comCh, err := ch.Committer()
	if err != nil {
		return c, err
	}
	c.reg = comCh.Registry
	comCh.Own = creds.signer
	c.reg.SetKeyTableLimit(keyTables)
	p.addRegistry(c.reg)
	clientTLS := WithRevocation(chClientTLS, c.reg)
	toOrderer := grpc.WithTransportCredentials(credentials.NewTLS(ExpectServer(clientTLS, identity.RoleOrderer)))
	toPeer := grpc.WithTransportCredentials(credentials.NewTLS(ExpectServer(clientTLS, identity.RolePeer)))
	// Every peer prefers a different orderer (its position among the
	// channel's peers, modulo the orderers), so that submissions and block
	// streams spread over a Raft cluster; the rest follow as failovers.
	// The set starts from the channel file and follows config blocks
	// (ordererBook), those already stored first.
	eps := ch.Orderers()
	c.book = newOrdererBook(ch.Channel, c.reg, peerIndex(ch, cfg)%len(eps), func(name, addr string) (api.OrdererClient, error) {
		conn, err := dialNode(addr, toOrderer)
		if err != nil {
			return nil, err
		}
		c.conns = append(c.conns, conn)
		// Concurrent submissions go to the orderer in batches.
		return gateway.BatchSubmits(named(name, api.NewOrdererClient(conn))), nil
	}, log)
	if err := c.book.set(eps); err != nil {
		return c, err
	}
	if c.state, err = openState(cfg, c.store.Height(), c.store.Base().Height, c.store.Damaged(), &c.repairs, log); err != nil {
		return c, err
	}
	if err := repairBlocks(comCh, c.store, c.state, c.book.Orderers, &c.repairs, log); err != nil {
		return c, err
	}
	if c.committer, err = committer.New(comCh, c.store, c.state, opts, log); err != nil {
		return c, err
	}
	genesis, err := channelContracts(ch, cfg.builtins(), p.wasm, p.ext)
	if err != nil {
		return c, err
	}
	byName := map[string]ContractConfig{}
	for _, cc := range ch.Contracts {
		byName[cc.Name] = cc
	}
	// installed is the table the endorser and gateway run now, which
	// `_lifecycle` answers from: the committer's newer table is in force
	// only once installed (definitionInstaller).
	installed := new(atomic.Pointer[lifecycle.Table])
	defs := c.committer.Definitions()
	installed.Store(defs)
	loader := &contractLoader{channel: ch.Channel, builtins: cfg.builtins(), engine: p.wasm, external: p.ext, state: c.committer.State(), genesis: genesis, log: log,
		system: lifecycleContract{defs: installed.Load, genesis: byName, revocations: c.reg.Revocations}}
	if cfg.Join != "" { // a peer of an org a membership update adds: see NodeConfig.Join
		d, err := cfg.JoinOrg(ch)
		if err == nil {
			err = c.reg.AddJoiningOrg(d)
		}
		if err != nil && !errors.Is(err, identity.ErrAlreadyMember) { // already known: the chain brought it
			return c, err
		}
	}
	contracts, contractDefs := loader.load(defs)
	if c.endorser, err = endorser.New(endorser.Config{
		Channel: ch.Channel, Registry: c.reg, Signer: creds.signer, Contracts: contracts, Definitions: contractDefs,
		State: c.committer.State(), Seen: endorser.SeenIn(c.store.TxLocation), Height: c.committer.Height, Synced: c.committer.WaitHeight,
	}); err != nil {
		return c, err
	}
	c.book.replay(c.store)
	if c.remotes, err = newRemoteEndorsers(ch, cfg.Org, c.reg, toPeer, log); err != nil {
		return c, err
	}
	c.pool = gateway.NewPool(cfg.Name, gateway.LocalEndorser(c.endorser), cfg.Compute.PrimaryMode())
	if c.gw, err = gateway.New(gateway.Config{
		Channel: ch.Channel, Format: comCh.Format, Readers: ch.ReadRule(), Registry: c.reg, LocalOrg: cfg.Org, Peer: cfg.Name, Local: c.endorser, Pool: c.pool, Remote: c.remotes.current(), Policies: defs.Policies(),
		Orderers: c.book.Orderers(), OrderersNow: c.book.Orderers, Ledger: gateway.PeerLedger(c.store, c.committer), Blocks: c.store,
		ReportHeights: ch.OrdererBatch().Mode == cut.ModeStream,
		OrderWait:     orderWait(ch),
	}); err != nil {
		return c, err
	}
	inst := &definitionInstaller{last: defs, installed: installed, defs: c.committer.Definitions, loader: loader, e: c.endorser, gw: c.gw, log: log}
	c.committer.OnDefinitions(inst.install)
	inst.install() // any definition committed since defs was read
	c.remotes.follow(c.gw.SetRemote)
	c.committer.OnMembers(c.remotes.update)
	c.remotes.update() // any membership committed since the remotes were dialled
	c.poolSrv = &poolServer{pool: c.pool, reg: c.reg, org: cfg.Org, primary: cfg.Name, clientTLS: clientTLS, height: c.committer.Height, log: log,
		channel: ch.Channel}
	if cfg.Compute.VerifyOnCompute() {
		c.poolSrv.verify = c.committer.AddRemote
	}
	c.ready = &peerReadiness{channel: ch.Channel, next: c.committer.Next, orderers: c.book.Orderers}
	return c, nil
}

// routed is the channel as the peer's gRPC router serves it.
func (c *peerChannel) routed() *gateway.Channel {
	return &gateway.Channel{Name: c.name, Gateway: c.gw, Endorser: gateway.NewEndorserServer(c.endorser)}
}

// collectors are the channel's metrics; labelled, each series carries
// the label channel. A peer labels them when it serves several channels
// (their series would collide otherwise) and not when it serves one, whose
// series stay as they were before channels (which dashboards, the bench
// and `strand net` read by their exact text).
func (c *peerChannel) collectors(labelled bool) []prometheus.Collector {
	cs := []prometheus.Collector{
		NewCommitterCollector(c.committer),
		NewStructCollector("endorser", func() any { return c.endorser.Metrics() }),
		NewStructCollector("gateway", func() any { return c.gw.Metrics() }),
		NewStructCollector("pool", func() any { return c.pool.Metrics() }),
		NewStructCollector("blockstore", func() any { return c.store.Stats() }),
		NewStructCollector("repair", func() any { return c.repairs }),
		NewStructCollector("key_tables", func() any { return c.reg.KeyTableMetrics() }),
	}
	if mc, ok := c.state.(*memnode.Client); ok { // cache hits, remote reads, call latency
		cs = append(cs, NewStructCollector("memnode_client", func() any { return mc.Metrics() }))
	}
	if labelled {
		for i, col := range cs {
			cs[i] = prometheus.WrapCollectorWith(prometheus.Labels{"channel": c.name}, col)
		}
	}
	return cs
}

// follow pulls the channel's blocks from its ordering service into the
// committer until ctx ends; why it stopped otherwise is its readiness.
func (c *peerChannel) follow(ctx context.Context, log *slog.Logger) {
	if err := Follow(ctx, c.book.Orderers, c.name, c.committer, DefaultStallAfter, log, c.book.observe); err != nil && !errors.Is(err, context.Canceled) {
		c.ready.stopped.Store(&err)
		log.Error("following the ordering service stopped", "channel", c.name, "err", err)
	}
}

// close closes the committer, the state database and the block store, in
// that order; the caller has stopped serving and following.
func (c *peerChannel) close() error {
	var errs []error
	if c.remotes != nil {
		c.remotes.close()
	}
	if c.committer != nil {
		if err := c.committer.Close(); err != nil && !errors.Is(err, committer.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if c.state != nil {
		errs = append(errs, c.state.Close())
	}
	if c.store != nil {
		errs = append(errs, c.store.Close())
	}
	for _, conn := range c.conns {
		errs = append(errs, conn.Close())
	}
	return errors.Join(errs...)
}
