package orderer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/internal/gopool"
)

// NewServer adapts o to the gRPC service api.OrdererServer. Submit answers
// with a SubmitResponse whose status is StatusOf the admission error (200,
// 400, 403, 404, 429, 503) and whose message is the error text; only a
// done context is a gRPC error. Deliver checks the request's channel
// (codes.NotFound otherwise) and the caller against the read policy
// (codes.PermissionDenied, Orderer.AuthorizeRead), then streams one
// DeliverResponse per block,
// following new blocks unless req.Stop is set. Transport security is the
// caller's (node wires mutual TLS).
func NewServer(o *Orderer) api.OrdererServer { return &server{o: o} }

type server struct {
	api.UnimplementedOrdererServer
	o *Orderer
	// admit runs SubmitBatch's admissions: a signature check grows a
	// fresh goroutine's stack, which cost the orderer 4% of its CPU.
	admit gopool.Pool
}

func (s *server) Submit(ctx context.Context, req *api.SubmitRequest) (*api.SubmitResponse, error) {
	s.o.Report(ctx, req.GetPeer(), req.GetPeerHeight())
	return s.submit(ctx, req.GetTransaction())
}

func (s *server) submit(ctx context.Context, raw []byte) (*api.SubmitResponse, error) {
	err := s.o.Submit(ctx, raw)
	if err == nil {
		return &api.SubmitResponse{Status: StatusOK}, nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, status.FromContextError(err).Err()
	}
	return &api.SubmitResponse{Status: StatusOf(err), Message: err.Error()}, nil
}

// maxBatchTxs bounds the transactions of one SubmitBatch call.
const maxBatchTxs = 4096

// SubmitBatch admits each transaction as Submit does, verifying their
// signatures concurrently (the admission's cost), and answers each in
// order. A context that ends fails the whole call, as it would a Submit.
func (s *server) SubmitBatch(ctx context.Context, req *api.SubmitBatchRequest) (*api.SubmitBatchResponse, error) {
	txs := req.GetTransactions()
	if len(txs) > maxBatchTxs {
		return nil, status.Errorf(codes.InvalidArgument, "orderer: a batch of %d transactions, want at most %d", len(txs), maxBatchTxs)
	}
	s.o.Report(ctx, req.GetPeer(), req.GetPeerHeight())
	out := make([]*api.SubmitResponse, len(txs))
	errs := make([]error, len(txs))
	var wg sync.WaitGroup
	for i, raw := range txs {
		wg.Add(1)
		s.admit.Go(func() {
			defer wg.Done()
			out[i], errs[i] = s.submit(ctx, raw)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return &api.SubmitBatchResponse{Responses: out}, nil
}

func (s *server) Deliver(req *api.DeliverRequest, stream grpc.ServerStreamingServer[api.DeliverResponse]) error {
	if req.GetChannel() != s.o.cfg.Channel {
		return status.Errorf(codes.NotFound, "%v: deliver asked for channel %q, this orderer orders channel %q",
			ErrWrongChannel, req.GetChannel(), s.o.cfg.Channel)
	}
	if err := s.o.AuthorizeRead(stream.Context()); err != nil {
		return status.Error(codes.PermissionDenied, err.Error())
	}
	err := s.o.Deliver(stream.Context(), req.GetStart(), !req.GetStop(), func(raw []byte) error {
		return stream.Send(&api.DeliverResponse{Block: raw})
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	case errors.Is(err, ErrClosed):
		return status.Error(codes.Unavailable, err.Error())
	}
	return status.Error(codes.Internal, fmt.Sprint(err))
}
