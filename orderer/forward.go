package orderer

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/strand-ledger/strand/api"
)

// Forwarding: a follower sends the transactions it admitted to the
// leader, which queues them as its own (Cluster.Forward).

// forwarded takes a transaction a follower admitted (creator and
// signature already checked there) and queues it here, on the leader.
func (t *transport) forwarded(ctx context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	from, err := t.member(ctx)
	if err != nil {
		return nil, t.refuse("forwarded transaction", refuseNotMember, err)
	}
	if api.IsConfigEnvelope(in.Value) { // checked on the follower; the leader checks again when it proposes
		env, _, err := api.DecodeConfigEnvelope(in.Value)
		if err != nil {
			return nil, t.refuse("forwarded config update", refuseMalformed, fmt.Errorf("from orderer %d: %w", from, err))
		}
		return t.queueForwarded(ctx, admitted{raw: in.Value, id: env.ID(), config: true})
	}
	if api.IsMembersEnvelope(in.Value) { // checked on the follower and again here, against the leader's lists
		a, err := t.o.admitMembers(in.Value)
		if err != nil {
			return nil, t.refuse("forwarded membership update", refuseMalformed, fmt.Errorf("from orderer %d: %w", from, err))
		}
		return t.queueForwarded(ctx, a)
	}
	tx, _, err := api.DecodeTx(in.Value)
	if err != nil {
		return nil, t.refuse("forwarded transaction", refuseMalformed, fmt.Errorf("from orderer %d: %w", from, err))
	}
	if ch := tx.Payload.Header.Channel; ch != t.o.cfg.Channel {
		return nil, status.Errorf(codes.NotFound, "%v: tx %s is for channel %q, this orderer orders %q", ErrWrongChannel, tx.ID(), ch, t.o.cfg.Channel)
	}
	return t.queueForwarded(ctx, admitted{raw: in.Value, id: tx.ID()})
}

func (t *transport) queueForwarded(ctx context.Context, a admitted) (*wrapperspb.BytesValue, error) {
	t.o.m.forwardedIn.Add(1)
	if err := t.o.enqueue(ctx, a); err != nil {
		return nil, status.Error(grpcCode(err), err.Error())
	}
	return &wrapperspb.BytesValue{}, nil
}

// forward sends an admitted transaction to the leader and maps its answer
// back to this package's errors.
func (t *transport) forward(ctx context.Context, leader uint64, a admitted) error {
	l, ok := t.link(leader)
	if !ok {
		return fmt.Errorf("%w: tx %s: leader %d is not a known peer", ErrUnavailable, a.id, leader)
	}
	err := l.conn.Invoke(ctx, "/"+clusterService+"/Forward", &wrapperspb.BytesValue{Value: a.raw}, &wrapperspb.BytesValue{})
	if err == nil {
		t.o.m.forwardedOut.Add(1)
		return nil
	}
	s := status.Convert(err)
	switch s.Code() {
	case codes.ResourceExhausted:
		return fmt.Errorf("%w: tx %s: leader %s/%s: %s", ErrOverloaded, a.id, l.p.Org, l.p.Name, s.Message())
	case codes.Canceled, codes.DeadlineExceeded:
		if ctx.Err() != nil {
			return fmt.Errorf("orderer: forwarding tx %s: %w", a.id, ctx.Err())
		}
	}
	return fmt.Errorf("%w: tx %s: forwarding to the leader, orderer %d (%s/%s at %s): %s",
		ErrUnavailable, a.id, leader, l.p.Org, l.p.Name, l.p.Address, s.Message())
}

// grpcCode maps an enqueue error to the code forward maps back.
func grpcCode(err error) codes.Code {
	switch {
	case errors.Is(err, ErrOverloaded):
		return codes.ResourceExhausted
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Unavailable
}
