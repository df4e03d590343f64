package gateway

import (
	"context"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/ledger"
)

// PeerLedger is the Ledger of a peer: the tx index of its block store and
// the events and height of its committer.
func PeerLedger(store *ledger.BlockStore, c *committer.Committer) Ledger {
	return peerLedger{store: store, c: c}
}

type peerLedger struct {
	store *ledger.BlockStore
	c     *committer.Committer
}

func (l peerLedger) TxLocation(txID string) (ledger.Location, bool, error) {
	return l.store.TxLocation(txID)
}
func (l peerLedger) Subscribe(buffer int) *committer.Subscription { return l.c.Subscribe(buffer) }
func (l peerLedger) Height() uint64                               { return l.c.Height() }

// NewEndorserServer serves a peer's endorser to other orgs' gateways.
func NewEndorserServer(e *endorser.Endorser) api.EndorserServer { return endorserServer{e: e} }

type endorserServer struct {
	api.UnimplementedEndorserServer
	e *endorser.Endorser
}

func (s endorserServer) ProcessProposal(ctx context.Context, sp *api.SignedProposal) (*api.ProposalResponse, error) {
	return s.e.ProcessProposal(ctx, sp), nil
}

// NamedEndorser gives an endorser client a name, such as its address,
// that the gateway's messages use for it.
func NamedEndorser(name string, c api.EndorserClient) api.EndorserClient {
	return namedEndorser{EndorserClient: c, name: name}
}

type namedEndorser struct {
	api.EndorserClient
	name string
}

func (n namedEndorser) String() string { return n.name }

// NamedOrderer gives an orderer client a name, such as its address, that
// the gateway's messages use for it.
func NamedOrderer(name string, c api.OrdererClient) api.OrdererClient {
	return namedOrderer{OrdererClient: c, name: name}
}

type namedOrderer struct {
	api.OrdererClient
	name string
}

func (n namedOrderer) String() string { return n.name }
