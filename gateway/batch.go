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

// Limits of one SubmitBatch call a batcher makes.
const (
	batchMaxTxs   = 512
	batchMaxBytes = 2 << 20 // well under the orderer's 4 MiB request limit
)

// BatchSubmits returns an orderer client whose Submit calls that arrive
// while an earlier batch is in flight go to the orderer together, as one
// SubmitBatch, when that batch returns: no timer, so a lone call goes at
// once and batches grow with the load (as the orderer's stream mode cuts
// blocks). Each caller gets its own transaction's answer. It saves a
// message each way, and the system calls and gRPC work that come with
// it, per transaction on the gateway and the orderer.
//
// An orderer that does not know SubmitBatch (codes.Unimplemented) gets
// single Submits from then on. Other methods go to c unchanged, and c's
// String, if it has one, names the result too.
func BatchSubmits(c api.OrdererClient) api.OrdererClient {
	return &batcher{OrdererClient: c}
}

type batcher struct {
	api.OrdererClient
	mu struct {
		sync.Mutex
		pending []*pendingSubmit
		sending bool // a send loop runs
		single  bool // the orderer answered SubmitBatch with Unimplemented
	}
}

type pendingSubmit struct {
	ctx  context.Context
	req  *api.SubmitRequest
	done chan submitAnswer // buffered: the sender never blocks on it
}

type submitAnswer struct {
	r   *api.SubmitResponse
	err error
}

func (b *batcher) String() string {
	if s, ok := b.OrdererClient.(fmt.Stringer); ok {
		return s.String()
	}
	return "orderer"
}

// Queued returns the transactions waiting for the next batch.
func (b *batcher) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.mu.pending)
}

// Submit queues req for the next batch and waits for its answer or for
// ctx to end (the transaction may then still be admitted, as with a
// Submit cut off after sending).
func (b *batcher) Submit(ctx context.Context, req *api.SubmitRequest, opts ...grpc.CallOption) (*api.SubmitResponse, error) {
	p := &pendingSubmit{ctx: ctx, req: req, done: make(chan submitAnswer, 1)}
	b.mu.Lock()
	if b.mu.single {
		b.mu.Unlock()
		return b.OrdererClient.Submit(ctx, req, opts...)
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
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// send sends batches until none is pending.
func (b *batcher) send() {
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
func (b *batcher) take() []*pendingSubmit {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.mu.pending) == 0 {
		b.mu.sending = false
		return nil
	}
	n, size := 0, 0
	for n < len(b.mu.pending) && n < batchMaxTxs {
		l := len(b.mu.pending[n].req.GetTransaction())
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
func (b *batcher) sendBatch(batch []*pendingSubmit) {
	answer := func(i int, a submitAnswer) { batch[i].done <- a }
	if len(batch) == 1 {
		r, err := b.OrdererClient.Submit(batch[0].ctx, batch[0].req)
		answer(0, submitAnswer{r, err})
		return
	}
	var deadline time.Time
	req := &api.SubmitBatchRequest{Transactions: make([][]byte, len(batch))}
	for i, p := range batch {
		req.Transactions[i] = p.req.GetTransaction()
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
	resp, err := b.OrdererClient.SubmitBatch(ctx, req)
	if status.Code(err) == codes.Unimplemented {
		b.mu.Lock()
		b.mu.single = true
		b.mu.Unlock()
		var wg sync.WaitGroup
		for i, p := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := b.OrdererClient.Submit(p.ctx, p.req)
				answer(i, submitAnswer{r, err})
			}()
		}
		wg.Wait()
		return
	}
	if err == nil && len(resp.GetResponses()) != len(batch) {
		err = status.Errorf(codes.Internal, "gateway: the orderer answered a batch of %d transactions with %d answers", len(batch), len(resp.GetResponses()))
	}
	for i := range batch {
		if err != nil {
			answer(i, submitAnswer{nil, err})
		} else {
			answer(i, submitAnswer{resp.GetResponses()[i], nil})
		}
	}
}
