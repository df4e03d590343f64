package gateway

import (
	"context"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/internal/gopool"
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

// maxBatchProposals bounds the proposals of one ProcessProposals call
// (a gateway sends at most batchMaxCalls).
const maxBatchProposals = 4096

// proposals runs the proposals of ProcessProposals batches, on goroutines
// whose stacks have grown.
var proposals gopool.Pool

// ProcessProposals endorses each proposal as ProcessProposal does, all at
// once, and answers each in order.
func (s endorserServer) ProcessProposals(ctx context.Context, b *api.ProposalBatch) (*api.ProposalBatchResponse, error) {
	sps := b.GetProposals()
	if len(sps) > maxBatchProposals {
		return nil, status.Errorf(codes.InvalidArgument, "gateway: a batch of %d proposals, want at most %d", len(sps), maxBatchProposals)
	}
	out := make([]*api.ProposalResponse, len(sps))
	var wg sync.WaitGroup
	for i, sp := range sps {
		wg.Add(1)
		proposals.Go(func() {
			defer wg.Done()
			out[i] = s.e.ProcessProposal(ctx, sp)
		})
	}
	wg.Wait()
	return &api.ProposalBatchResponse{Responses: out}, nil
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
