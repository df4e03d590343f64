package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
)

// Limits of one batch call a batcher makes.
const (
	batchMaxCalls = 512
	batchMaxBytes = 2 << 20 // well under gRPC's 4 MiB message limit
)

// batcher turns concurrent calls into batch calls: the calls that arrive
// while a batch is in flight go together, as one batch, when it returns.
// There is no timer, so a lone call goes at once and batches grow with
// the load (as the orderer's stream mode cuts blocks). Each caller gets
// its own answer. It saves a message each way per call, and the system
// calls and gRPC work that come with it, on both sides.
//
// A server that does not know the batch method (codes.Unimplemented) gets
// single calls from then on.
type batcher[Req, Resp any] struct {
	name string // the server, for errors
	one  func(context.Context, Req) (Resp, error)
	many func(context.Context, []Req) ([]Resp, error)
	size func(Req) int // bytes, for batchMaxBytes
	mu   struct {
		sync.Mutex
		pending []*pendingCall[Req, Resp]
		sending bool // a send loop runs
		single  bool // the server answered a batch with Unimplemented
	}
}

type pendingCall[Req, Resp any] struct {
	ctx  context.Context
	req  Req
	done chan callAnswer[Resp] // buffered: the sender never blocks on it
}

type callAnswer[Resp any] struct {
	r   Resp
	err error
}

// queued returns the calls waiting for the next batch.
func (b *batcher[Req, Resp]) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.mu.pending)
}

// call queues req for the next batch and waits for its answer or for ctx
// to end (the server may then still run it, as with a unary call cut off
// after sending).
func (b *batcher[Req, Resp]) call(ctx context.Context, req Req) (Resp, error) {
	p := &pendingCall[Req, Resp]{ctx: ctx, req: req, done: make(chan callAnswer[Resp], 1)}
	b.mu.Lock()
	if b.mu.single {
		b.mu.Unlock()
		return b.one(ctx, req)
	}
	b.mu.pending = append(b.mu.pending, p)
	start := !b.mu.sending
	b.mu.sending = true
	b.mu.Unlock()
	if start {
		go b.send()
	}
	select {
	case a := <-p.done:
		return a.r, a.err
	case <-ctx.Done():
		var zero Resp
		return zero, status.FromContextError(ctx.Err()).Err()
	}
}

// send sends batches until none is pending.
func (b *batcher[Req, Resp]) send() {
	for {
		batch := b.take()
		if batch == nil {
			return
		}
		b.sendBatch(batch)
	}
}

// take removes the next batch from the queue, nil (and the send loop
// ends) if it is empty.
func (b *batcher[Req, Resp]) take() []*pendingCall[Req, Resp] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.mu.pending) == 0 {
		b.mu.sending = false
		return nil
	}
	n, size := 0, 0
	for n < len(b.mu.pending) && n < batchMaxCalls {
		l := b.size(b.mu.pending[n].req)
		if n > 0 && size+l > batchMaxBytes {
			break
		}
		n, size = n+1, size+l
	}
	batch := b.mu.pending[:n:n]
	b.mu.pending = b.mu.pending[n:]
	return batch
}

// sendBatch sends one batch under the latest deadline of its callers (a
// caller whose context ended has stopped waiting; the others must not be
// cut short by it) and hands each caller its answer.
func (b *batcher[Req, Resp]) sendBatch(batch []*pendingCall[Req, Resp]) {
	answer := func(i int, r Resp, err error) { batch[i].done <- callAnswer[Resp]{r, err} }
	if len(batch) == 1 {
		r, err := b.one(batch[0].ctx, batch[0].req)
		answer(0, r, err)
		return
	}
	var deadline time.Time
	reqs := make([]Req, len(batch))
	for i, p := range batch {
		reqs[i] = p.req
		d, ok := p.ctx.Deadline()
		if !ok {
			d = time.Now().Add(time.Hour)
		}
		if d.After(deadline) {
			deadline = d
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	resps, err := b.many(ctx, reqs)
	if status.Code(err) == codes.Unimplemented {
		b.mu.Lock()
		b.mu.single = true
		b.mu.Unlock()
		var wg sync.WaitGroup
		for i, p := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := b.one(p.ctx, p.req)
				answer(i, r, err)
			}()
		}
		wg.Wait()
		return
	}
	if err == nil && len(resps) != len(batch) {
		err = status.Errorf(codes.Internal, "gateway: %s answered a batch of %d calls with %d answers", b.name, len(batch), len(resps))
	}
	for i := range batch {
		var r Resp
		if err == nil {
			r = resps[i]
		}
		answer(i, r, err)
	}
}

// nameOf returns c's String, if it has one, else def.
func nameOf(c any, def string) string {
	if s, ok := c.(fmt.Stringer); ok {
		return s.String()
	}
	return def
}

// BatchSubmits returns an orderer client whose Submit calls go to the
// orderer in batches (SubmitBatch), as a batcher sends them. Other
// methods go to c unchanged, and c's String, if it has one, names the
// result too.
func BatchSubmits(c api.OrdererClient) api.OrdererClient {
	s := &submitBatcher{OrdererClient: c}
	s.b = batcher[*api.SubmitRequest, *api.SubmitResponse]{
		name: s.String(),
		one: func(ctx context.Context, r *api.SubmitRequest) (*api.SubmitResponse, error) {
			return c.Submit(ctx, r)
		},
		many: func(ctx context.Context, rs []*api.SubmitRequest) ([]*api.SubmitResponse, error) {
			req := &api.SubmitBatchRequest{Transactions: make([][]byte, len(rs)), Peer: rs[0].GetPeer()}
			for i, r := range rs {
				req.Transactions[i] = r.GetTransaction()
				req.PeerHeight = max(req.PeerHeight, r.GetPeerHeight())
			}
			resp, err := c.SubmitBatch(ctx, req)
			return resp.GetResponses(), err
		},
		size: func(r *api.SubmitRequest) int { return len(r.GetTransaction()) },
	}
	return s
}

type submitBatcher struct {
	api.OrdererClient
	b batcher[*api.SubmitRequest, *api.SubmitResponse]
}

func (s *submitBatcher) String() string { return nameOf(s.OrdererClient, "orderer") }

// Queued returns the transactions waiting for the next batch.
func (s *submitBatcher) Queued() int { return s.b.queued() }

// Submit queues req for the next batch and waits for its answer.
func (s *submitBatcher) Submit(ctx context.Context, req *api.SubmitRequest, _ ...grpc.CallOption) (*api.SubmitResponse, error) {
	return s.b.call(ctx, req)
}

// BatchProposals returns an endorser client whose ProcessProposal calls go
// to the peer in batches (ProcessProposals), as a batcher sends them: a
// gateway asks another org's peer for an endorsement of every transaction
// its clients submit. c's String, if it has one, names the result too.
func BatchProposals(c api.EndorserClient) api.EndorserClient {
	p := &proposalBatcher{EndorserClient: c}
	p.b = batcher[*api.SignedProposal, *api.ProposalResponse]{
		name: p.String(),
		one: func(ctx context.Context, sp *api.SignedProposal) (*api.ProposalResponse, error) {
			return c.ProcessProposal(ctx, sp)
		},
		many: func(ctx context.Context, sps []*api.SignedProposal) ([]*api.ProposalResponse, error) {
			resp, err := c.ProcessProposals(ctx, &api.ProposalBatch{Proposals: sps})
			return resp.GetResponses(), err
		},
		size: func(sp *api.SignedProposal) int { return len(sp.GetProposal()) + len(sp.GetSignature()) },
	}
	return p
}

type proposalBatcher struct {
	api.EndorserClient
	b batcher[*api.SignedProposal, *api.ProposalResponse]
}

func (p *proposalBatcher) String() string { return nameOf(p.EndorserClient, "endorser") }

// Queued returns the proposals waiting for the next batch.
func (p *proposalBatcher) Queued() int { return p.b.queued() }

// ProcessProposal queues sp for the next batch and waits for its answer.
func (p *proposalBatcher) ProcessProposal(ctx context.Context, sp *api.SignedProposal, _ ...grpc.CallOption) (*api.ProposalResponse, error) {
	return p.b.call(ctx, sp)
}
