package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contracts/fixedasset"
	"github.com/strand-ledger/strand/contracts/kv"
	"github.com/strand-ledger/strand/contracts/simple"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
)

// Builtins are the contracts this binary can run, by name.
var Builtins = map[string]func() contract.Contract{
	smallbank.Name:  smallbank.New,
	kv.Name:         kv.New,
	fixedasset.Name: fixedasset.New,
	simple.Name:     simple.New,
}

// Peer is a running peer: ledger, committer, endorser, gateway, and the
// loop that pulls blocks from the ordering service.
type Peer struct {
	base
	Committer *committer.Committer
	State     statedb.DB

	conns  []*grpc.ClientConn
	cancel context.CancelFunc
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
	ch, err := p.open(cfg)
	if err != nil {
		return nil, err
	}
	if p.State, err = openState(cfg); err != nil {
		return nil, err
	}
	comCh, err := ch.Committer()
	if err != nil {
		return nil, err
	}
	opts, err := cfg.CommitterOptions()
	if err != nil {
		return nil, err
	}
	if p.Committer, err = committer.New(comCh, p.Store, p.State, opts, p.log); err != nil {
		return nil, err
	}
	signer, err := cfg.Signer()
	if err != nil {
		return nil, err
	}
	contracts, err := builtinContracts(ch)
	if err != nil {
		return nil, err
	}
	e, err := endorser.New(endorser.Config{
		Channel: ch.Channel, Registry: comCh.Registry, Signer: signer, Contracts: contracts,
		State: p.Committer.State(), Seen: endorser.SeenIn(p.Store.TxLocation),
	})
	if err != nil {
		return nil, err
	}
	serverTLS, clientTLS, err := LoadTLS(cfg, ch)
	if err != nil {
		return nil, err
	}
	creds := grpc.WithTransportCredentials(credentials.NewTLS(clientTLS))
	var orderers []api.OrdererClient
	for _, o := range ch.Orderers() {
		conn, err := p.dial(o.Address, creds)
		if err != nil {
			return nil, err
		}
		orderers = append(orderers, api.NewOrdererClient(conn))
	}
	remote := map[string][]api.EndorserClient{}
	for _, org := range comCh.Registry.Orgs() {
		if org == cfg.Org {
			continue
		}
		for _, pe := range ch.PeersOf(org) {
			conn, err := p.dial(pe.Address, creds)
			if err != nil {
				return nil, err
			}
			remote[org] = append(remote[org], api.NewEndorserClient(conn))
		}
	}
	gw, err := gateway.New(gateway.Config{
		Channel: ch.Channel, LocalOrg: cfg.Org, Local: e, Remote: remote, Policies: comCh.Policies,
		Orderers: orderers, Ledger: gateway.PeerLedger(p.Store, p.Committer), Blocks: p.Store,
	})
	if err != nil {
		return nil, err
	}
	if err := p.serve(cfg.Listen, serverTLS, func(s *grpc.Server) {
		api.RegisterGatewayServer(s, gw)
		api.RegisterEndorserServer(s, gateway.NewEndorserServer(e))
	}); err != nil {
		return nil, err
	}
	if p.metrics, err = startMetrics(cfg.Metrics, p.log,
		NewCommitterCollector(p.Committer),
		NewStructCollector("endorser", func() any { return e.Metrics() }),
		NewStructCollector("gateway", func() any { return gw.Metrics() }),
		NewStructCollector("blockstore", func() any { return p.Store.Stats() }),
	); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := Follow(ctx, orderers, ch.Channel, p.Committer, p.log); err != nil && !errors.Is(err, context.Canceled) {
			p.log.Error("following the ordering service stopped", "err", err)
		}
	}()
	p.log.Info("peer started", "listen", p.Addr, "height", p.Committer.Height(), "channel", ch.Channel)
	return p, nil
}

func openState(cfg *NodeConfig) (statedb.DB, error) {
	switch cfg.StateDB.Backend {
	case "memory":
		return memdb.New(), nil
	case "pebble", "":
		return pebbledb.Open(filepath.Join(cfg.DataDir, "state"), cfg.PebbleOptions())
	}
	return nil, fmt.Errorf("node: stateDB.backend %q: want pebble or memory", cfg.StateDB.Backend)
}

// builtinContracts instantiates the contracts the channel defines.
func builtinContracts(ch *ChannelConfig) (map[string]contract.Contract, error) {
	out := map[string]contract.Contract{}
	for _, c := range ch.Contracts {
		newContract, ok := Builtins[c.Name]
		if !ok {
			known := make([]string, 0, len(Builtins))
			for name := range Builtins {
				known = append(known, name)
			}
			sort.Strings(known)
			return nil, fmt.Errorf("node: channel %q defines contract %q, which this binary does not have (built in: %s)",
				ch.Channel, c.Name, strings.Join(known, ", "))
		}
		out[c.Name] = newContract()
	}
	return out, nil
}

func (p *Peer) dial(addr string, creds grpc.DialOption) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(addr, creds)
	if err != nil {
		return nil, fmt.Errorf("node: connecting to %s: %w", addr, err)
	}
	p.conns = append(p.conns, conn)
	return conn, nil
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
	if p.Committer != nil {
		if err := p.Committer.Close(); err != nil && !errors.Is(err, committer.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if p.State != nil {
		errs = append(errs, p.State.Close())
	}
	return p.closeRest(errs...)
}
