package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contract/external"
	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/buildinfo"
	"github.com/strand-ledger/strand/internal/grpctune"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/memnode"
	"github.com/strand-ledger/strand/mux"
	"github.com/strand-ledger/strand/orderer"
)

// Compute is a running compute node: an endorser over its primary's
// memory node, served to the primary's gateway, and the Join stream that
// keeps it in the primary's pool.
type Compute struct {
	base
	Endorser *endorser.Endorser
	state    *memnode.Client
	primary  *mux.Conn
	joined   atomic.Bool
	joins    atomic.Uint64
	cancel   context.CancelFunc
	wasm     *wasm.Engine      // nil until the channel is read
	ext      *external.Runtime // its external (gRPC) contracts
	defs     *computeDefinitions
	verifier *verifierServer // stage-1 signature checks for the primary
}

// ComputeMetrics is a snapshot of a compute node's membership.
type ComputeMetrics struct {
	Joined uint64 `metric:"gauge"`   // 1 while its Join stream to the primary lives
	Joins  uint64 `metric:"counter"` // Join streams the primary accepted
	Height uint64 `metric:"gauge"`   // the memory node's height as its reads last saw it
	// DefinitionInstalls counts the contract definition tables installed
	// after the one read at start: deploys and upgrades followed.
	DefinitionInstalls uint64 `metric:"counter"`
	// DefinitionReadFailures counts reads of the definitions from the
	// memory node that failed (each tried again).
	DefinitionReadFailures uint64 `metric:"counter"`
	// SignatureChecks counts the transactions whose signatures it checked
	// for its primary's stage 1 (compute.verify: compute on the primary).
	SignatureChecks uint64 `metric:"counter"`
}

// StartCompute starts the compute node cfg describes: it reads the
// channel, connects to the memory node, serves its endorser and joins its
// primary. A memory node that does not answer at start is an error; one
// that stops answering later fails endorsements with a retryable 503.
func StartCompute(cfg *ComputeConfig) (_ *Compute, err error) {
	c := &Compute{}
	c.Name, c.log = cfg.Name, cfg.Logger()
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	c.log.Info("starting", append([]any{"role", "compute", "config", cfg.file}, buildinfo.Read().LogAttrs()...)...)
	ch, err := LoadChannel(cfg.Channel)
	if err != nil {
		return nil, err
	}
	primaryAddr, err := cfg.CheckChannel(ch)
	if err != nil {
		return nil, err
	}
	peerCfg := cfg.asPeer()
	signer, err := peerCfg.Signer()
	if err != nil {
		return nil, err
	}
	serverTLS, clientTLS, err := LoadTLS(peerCfg, ch)
	if err != nil {
		return nil, err
	}
	memTLS, err := memnodeTLS(cfg.TLS, cfg.Memnode.CAs, false)
	if err != nil {
		return nil, err
	}
	comCh, err := ch.Committer()
	if err != nil {
		return nil, err
	}
	// A reader: its cache follows the memory node's change feed and its
	// fence the node's height (memnode.Client); the feed also tells of
	// committed contract definitions (computeDefinitions).
	c.defs = newComputeDefinitions(comCh.Policies, c.log)
	opts := memnode.ClientOptions{Address: cfg.Memnode.Address, TLS: memTLS, CacheBytes: int64(cfg.Memnode.CacheMB) << 20, CallTimeout: cfg.Memnode.CallTimeout,
		Follow: true, OnChange: c.defs.changed}
	if cfg.Memnode.CacheMB == -1 {
		opts.CacheBytes = -1
	}
	if c.state, err = memnode.Dial(opts); err != nil {
		return nil, fmt.Errorf("node: compute node %s: its memory node (memnode.address %s): %w", cfg.Name, cfg.Memnode.Address, err)
	}
	contracts, defs, err := c.startContracts(ch, clientTLS, cfg.Org, cfg.builtins())
	if err != nil {
		return nil, err
	}
	c.Endorser, err = endorser.New(endorser.Config{
		Channel: ch.Channel, Registry: comCh.Registry, Signer: signer, Contracts: contracts, Definitions: defs,
		State: readerState{c.state},
		// No tx index here: the primary's gateway refuses a used tx id
		// before it asks a compute node, and its committer invalidates a
		// duplicate that slips through (DUPLICATE_TXID).
		Seen: func(string) (bool, error) { return false, nil },
		// The feed's height, not ReadHeight: a cache hit is as fresh as
		// the feed. A proposal's MinHeight waits for the feed.
		Height: c.state.FeedHeight, Synced: c.state.Synced,
	})
	if err != nil {
		return nil, err
	}
	c.defs.e = c.Endorser
	c.verifier = &verifierServer{reg: comCh.Registry, channel: ch.Channel, org: cfg.Org, primary: cfg.Primary}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.defs.run(ctx, definitionsRetry)
	}()
	if err := c.serve(cfg.Listen, serverTLS, nil, grpcServer{maxRecv: api.MaxRequestMessage, register: func(s grpc.ServiceRegistrar) {
		api.RegisterEndorserServer(s, gateway.NewEndorserServer(c.Endorser))
		api.RegisterVerifierServer(s, c.verifier)
	}}); err != nil {
		return nil, err
	}
	if c.metrics, err = startMetrics(cfg.Metrics, false, cfg.Name, c.ready, c.log,
		NewStructCollector("endorser", func() any { return c.Endorser.Metrics() }),
		NewStructCollector("memnode_client", func() any { return c.state.Metrics() }),
		NewStructCollector("compute", func() any { return c.Metrics() }),
		NewStructCollector("wasm", func() any { return c.wasm.Metrics() }),
		NewStructCollector("external", func() any { return c.ext.Metrics() })); err != nil {
		return nil, err
	}
	toPeer := credentials.NewTLS(expectName(ExpectServer(clientTLS, identity.RolePeer), cfg.Primary))
	cc, err := grpc.NewClient(primaryAddr, append(grpctune.DialOptions(), grpc.WithTransportCredentials(toPeer), orderer.Redial)...)
	if err != nil {
		return nil, fmt.Errorf("node: compute node %s: connecting to its primary %s at %s: %w", cfg.Name, cfg.Primary, primaryAddr, err)
	}
	c.primary = mux.NewConn(cc)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.stayJoined(ctx, api.NewComputePoolClient(c.primary), cfg.Primary, primaryAddr)
	}()
	c.log.Info("compute node serving", "listen", c.Addr, "primary", cfg.Primary, "memnode", cfg.Memnode.Address, "height", c.state.ReadHeight())
	return c, nil
}

// startContracts readies the contracts the compute node runs: those its
// primary runs, the channel file's and the definitions committed since,
// read from the memory node (computeDefinitions), each checked against
// its code hash. External contract servers see the compute node's own
// certificate (a peer's of its org) and are dialled at org's address.
func (c *Compute) startContracts(ch *ChannelConfig, clientTLS *tls.Config, org string, builtins *contract.Builtins) (map[string]contract.Contract, map[string]endorser.Definition, error) {
	var err error
	if c.wasm, err = wasm.NewEngine(wasm.Options{}); err != nil {
		return nil, nil, err
	}
	if c.ext, err = external.New(external.Options{Client: clientTLS, Org: org}); err != nil {
		return nil, nil, err
	}
	genesis, err := channelContracts(ch, builtins, c.wasm, c.ext)
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]ContractConfig{}
	for _, cc := range ch.Contracts {
		byName[cc.Name] = cc
	}
	c.defs.state = readerState{c.state}
	c.defs.loader = &contractLoader{channel: ch.Channel, builtins: builtins, engine: c.wasm, external: c.ext, state: readerState{c.state}, genesis: genesis, log: c.log,
		system: lifecycleContract{defs: c.defs.table.Load, genesis: byName}}
	start, err := c.defs.read()
	if err != nil {
		return nil, nil, fmt.Errorf("node: compute node %s: reading the contract definitions from its memory node: %w", c.Name, err)
	}
	contracts, defs := c.defs.loader.load(start)
	c.defs.table.Store(start)
	return contracts, defs, nil
}

// definitionsRetry is the wait before reading the definitions again
// after a read failed (the memory node unreachable).
const definitionsRetry = time.Second

// stayJoined keeps a Join stream to the primary open until ctx ends,
// joining again after a backoff (100 ms doubling to 2 s) whenever it
// breaks: the primary restarted or failed over.
func (c *Compute) stayJoined(ctx context.Context, pool api.ComputePoolClient, primary, addr string) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := c.join(ctx, pool)
		c.joined.Store(false)
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("not in the primary's pool; joining again", "primary", primary, "address", addr, "err", err, "retryIn", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// join holds one Join stream until it breaks.
func (c *Compute) join(ctx context.Context, pool api.ComputePoolClient) error {
	stream, err := pool.Join(ctx, &api.JoinRequest{Name: c.Name, Address: c.Addr})
	if err != nil {
		return err
	}
	ev, err := stream.Recv()
	if err != nil {
		return err
	}
	c.joined.Store(true)
	c.joins.Add(1)
	c.log.Info("joined the primary's pool", "members", ev.GetMembers(), "primaryHeight", ev.GetHeight())
	for {
		if _, err := stream.Recv(); err != nil {
			return err
		}
	}
}

// ready is the compute node's /readyz: ready while in its primary's pool.
func (c *Compute) ready(context.Context) error {
	if !c.joined.Load() {
		return errors.New("not (yet) in its primary's endorsement pool")
	}
	return nil
}

// Metrics returns the compute node's membership and height.
func (c *Compute) Metrics() ComputeMetrics {
	m := ComputeMetrics{Joins: c.joins.Load(), Height: c.state.ReadHeight(),
		DefinitionInstalls: c.defs.installs.Load(), DefinitionReadFailures: c.defs.failures.Load(), SignatureChecks: c.verifier.txs.Load()}
	if c.joined.Load() {
		m.Joined = 1
	}
	return m
}

// Close leaves the pool and stops serving.
func (c *Compute) Close() error {
	if c.cancel != nil {
		c.cancel()
	}
	var errs []error
	if c.primary != nil {
		errs = append(errs, c.primary.Close())
	}
	c.stopServing()
	if c.state != nil {
		errs = append(errs, c.state.Close())
	}
	if c.wasm != nil {
		errs = append(errs, c.wasm.Close())
	}
	if c.ext != nil {
		errs = append(errs, c.ext.Close())
	}
	err := c.closeRest(errs...)
	c.log.Info("compute node stopped", "err", err)
	return err
}

// readerState is a compute node's view of the memory node. A reader
// applies nothing, so when the node is found to have lost state
// (statedb.ErrStateLost: it restarted below the height this client last
// read) it simply starts over at the node's height: Savepoint moves the
// fence there. The call that found the loss still fails (503), as it
// would have read older state than the client had seen; the next reads
// the node as it is, and MVCC at the primary judges what it endorses.
type readerState struct{ c *memnode.Client }

func (r readerState) restartOnLoss(err error) error {
	if errors.Is(err, statedb.ErrStateLost) {
		_, _ = r.c.Savepoint()
	}
	return err
}

func (r readerState) Get(ns, key string) (statedb.Value, bool, error) {
	v, ok, err := r.c.Get(ns, key)
	return v, ok, r.restartOnLoss(err)
}

func (r readerState) GetMany(keys []statedb.Key, out []statedb.Result) error {
	return r.restartOnLoss(r.c.GetMany(keys, out))
}

func (r readerState) Scan(ns, start, end string, fn func(string, statedb.Value) bool) error {
	return r.restartOnLoss(r.c.Scan(ns, start, end, fn))
}
