package orderer

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
)

// NewServer adapts o to the gRPC service api.OrdererServer. Submit answers
// with a SubmitResponse whose status is StatusOf the admission error (200,
// 400, 403, 404, 429, 503) and whose message is the error text; only a
// done context is a gRPC error. Deliver checks the request's channel
// (codes.NotFound otherwise) and streams one DeliverResponse per block,
// following new blocks unless req.Stop is set. Transport security is the
// caller's (node wires mutual TLS).
func NewServer(o *Orderer) api.OrdererServer { return &server{o: o} }

type server struct {
	api.UnimplementedOrdererServer
	o *Orderer
}

func (s *server) Submit(ctx context.Context, req *api.SubmitRequest) (*api.SubmitResponse, error) {
	err := s.o.Submit(ctx, req.GetTransaction())
	if err == nil {
		return &api.SubmitResponse{Status: StatusOK}, nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, status.FromContextError(err).Err()
	}
	return &api.SubmitResponse{Status: StatusOf(err), Message: err.Error()}, nil
}

func (s *server) Deliver(req *api.DeliverRequest, stream grpc.ServerStreamingServer[api.DeliverResponse]) error {
	if req.GetChannel() != s.o.cfg.Channel {
		return status.Errorf(codes.NotFound, "%v: deliver asked for channel %q, this orderer orders channel %q",
			ErrWrongChannel, req.GetChannel(), s.o.cfg.Channel)
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
