// Package testnet starts a whole strand network inside one test process:
// per org a peer (block store, in-memory state, committer, endorser,
// gateway), one orderer, all talking real gRPC on 127.0.0.1 without TLS.
//
// Every peer follows the orderer's Deliver stream into its committer. The
// network shuts down in t.Cleanup. It is a test kit: it calls t.Fatal on
// any setup failure.
package testnet

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
	"github.com/strand-ledger/strand/orderer"
	"github.com/strand-ledger/strand/orderer/cut"
	"github.com/strand-ledger/strand/policy"
)

// Channel is the network's channel.
const Channel = "testch"

// OrdererOrg is the org of the orderer.
const OrdererOrg = "OrdererOrg"

// Options shape the network. Zero values give two orgs, Smallbank under
// AND('Org1.peer','Org2.peer') and blocks cut after 20 ms.
type Options struct {
	Orgs   []string // peer orgs, one peer each
	Policy string   // Smallbank's endorsement policy
	Batch  cut.Config
	// MaxInFlight is every gateway's Config.MaxInFlight.
	MaxInFlight int
}

// Network is a running network.
type Network struct {
	Registry    *identity.Registry
	CAs         map[string]*identity.CA
	Peers       []*Peer
	Orderer     *orderer.Orderer
	OrdererAddr string

	maxInFlight int
	orderWait   time.Duration // the batch timeout (block mode)
}

// Peer is one org's running peer; Addr serves its Gateway and Endorser.
type Peer struct {
	Org       string
	Addr      string
	Store     *ledger.BlockStore
	State     *memdb.DB
	Committer *committer.Committer
	Endorser  *endorser.Endorser
	Gateway   *gateway.Gateway
}

// Start starts a network and registers its shutdown with t.Cleanup.
func Start(t testing.TB, opts Options) *Network {
	t.Helper()
	if len(opts.Orgs) == 0 {
		opts.Orgs = []string{"Org1", "Org2"}
	}
	if opts.Policy == "" {
		opts.Policy = "AND('Org1.peer','Org2.peer')"
	}
	if opts.Batch.Timeout == 0 {
		opts.Batch.Timeout = 20 * time.Millisecond
	}
	n := &Network{CAs: map[string]*identity.CA{}, maxInFlight: opts.MaxInFlight}
	if opts.Batch.Mode != cut.ModeStream {
		n.orderWait = opts.Batch.Timeout
	}
	var orgs []identity.Org
	for _, org := range append(append([]string(nil), opts.Orgs...), OrdererOrg) {
		ca, err := identity.NewCA(org, identity.ECDSAP256)
		check(t, err)
		n.CAs[org] = ca
		orgs = append(orgs, identity.Org{ID: org, CACerts: [][]byte{ca.CertDER()}})
	}
	reg, err := identity.NewRegistry(orgs)
	check(t, err)
	n.Registry = reg
	pol, err := policy.Parse(opts.Policy)
	check(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // runs first: stops the followers

	n.startOrderer(t, opts.Batch)
	lis := make([]net.Listener, len(opts.Orgs))
	for i := range opts.Orgs {
		lis[i], err = net.Listen("tcp", "127.0.0.1:0")
		check(t, err)
	}
	for i, org := range opts.Orgs {
		remote := map[string][]api.EndorserClient{}
		for j, other := range opts.Orgs {
			if j != i {
				addr := lis[j].Addr().String()
				remote[other] = []api.EndorserClient{gateway.BatchProposals(gateway.NamedEndorser(addr, api.NewEndorserClient(dial(t, addr))))}
			}
		}
		p := n.startPeer(t, ctx, org, lis[i], pol, remote)
		n.Peers = append(n.Peers, p)
	}
	return n
}

// Issue issues a new identity of org with role.
func (n *Network) Issue(t testing.TB, org, name string, role identity.Role) *identity.Signer {
	t.Helper()
	s, err := n.CAs[org].Issue(name, role, identity.ECDSAP256)
	check(t, err)
	return s
}

// WaitHeight waits until every peer has committed height blocks.
func (n *Network) WaitHeight(t testing.TB, height uint64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for _, p := range n.Peers {
		for p.Committer.Height() < height {
			if time.Now().After(deadline) {
				t.Fatalf("testnet: peer of %s at height %d after %v, want %d", p.Org, p.Committer.Height(), timeout, height)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func (n *Network) startOrderer(t testing.TB, batch cut.Config) {
	t.Helper()
	store, err := ledger.OpenBlockStore(filepath.Join(t.TempDir(), "orderer"), ledger.Options{NoSync: true})
	check(t, err)
	o, err := orderer.New(orderer.Config{Channel: Channel, Registry: n.Registry,
		Signer: n.Issue(t, OrdererOrg, "orderer0", identity.RoleOrderer), Batch: batch, Store: store})
	check(t, err)
	n.Orderer = o
	srv := grpc.NewServer()
	api.RegisterOrdererServer(srv, orderer.NewServer(o))
	n.OrdererAddr = serve(t, srv, nil)
	t.Cleanup(func() { o.Close(); store.Close() })
}

func (n *Network) startPeer(t testing.TB, ctx context.Context, org string, lis net.Listener, pol *policy.Policy,
	remote map[string][]api.EndorserClient) *Peer {
	t.Helper()
	store, err := ledger.OpenBlockStore(filepath.Join(t.TempDir(), "peer-"+org), ledger.Options{NoSync: true})
	check(t, err)
	db := memdb.New()
	ch := committer.Channel{Name: Channel, Registry: n.Registry, OrdererOrgs: []string{OrdererOrg},
		Policies: map[string]*policy.Policy{smallbank.Name: pol}}
	c, err := committer.New(ch, store, db, committer.Options{}, nil)
	check(t, err)
	t.Cleanup(func() { c.Close(); store.Close(); db.Close() })
	e, err := endorser.New(endorser.Config{Channel: Channel, Registry: n.Registry,
		Signer:    n.Issue(t, org, "peer0."+org, identity.RolePeer),
		Contracts: map[string]contract.Contract{smallbank.Name: smallbank.New()},
		State:     db, Seen: endorser.SeenIn(store.TxLocation), Height: c.Height, Synced: c.WaitHeight})
	check(t, err)
	gw, err := gateway.New(gateway.Config{Channel: Channel, LocalOrg: org, Local: e, Remote: remote,
		Policies: ch.Policies, Orderers: []api.OrdererClient{gateway.BatchSubmits(gateway.NamedOrderer(n.OrdererAddr, api.NewOrdererClient(dial(t, n.OrdererAddr))))},
		Ledger: gateway.PeerLedger(store, c), Blocks: store, Timeout: 5 * time.Second, MaxInFlight: n.maxInFlight,
		OrderWait: n.orderWait})
	check(t, err)
	srv := grpc.NewServer()
	api.RegisterGatewayServer(srv, gw)
	api.RegisterEndorserServer(srv, gateway.NewEndorserServer(e))
	p := &Peer{Org: org, Addr: serve(t, srv, lis), Store: store, State: db, Committer: c, Endorser: e, Gateway: gw}
	go follow(ctx, api.NewOrdererClient(dial(t, n.OrdererAddr)), c)
	return p
}

// follow pulls blocks from the orderer into the committer until ctx ends,
// reconnecting from the committer's height after a stream error.
func follow(ctx context.Context, oc api.OrdererClient, c *committer.Committer) {
	for ctx.Err() == nil {
		stream, err := oc.Deliver(ctx, &api.DeliverRequest{Channel: Channel, Start: c.Height()})
		for err == nil {
			var r *api.DeliverResponse
			if r, err = stream.Recv(); err == nil {
				err = c.Deliver(r.Block)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// serve serves srv on lis (a new 127.0.0.1 listener if nil) until cleanup
// and returns its address.
func serve(t testing.TB, srv *grpc.Server, lis net.Listener) string {
	t.Helper()
	if lis == nil {
		var err error
		lis, err = net.Listen("tcp", "127.0.0.1:0")
		check(t, err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	check(t, err)
	t.Cleanup(func() { cc.Close() })
	return cc
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
