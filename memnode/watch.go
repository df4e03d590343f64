package memnode

import (
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// Watch implements api.MemoryNodeServer: the subscriber's sender. It
// sends what the hub queued for it, as the stream takes it; a stream
// that does not take its messages fills only its own backlog, which
// then turns into a resync (hub, backlog).
func (s *service) Watch(_ *api.MemWatchRequest, stream api.MemoryNode_WatchServer) error {
	sub := s.feed.subscribe()
	defer s.feed.unsubscribe(sub)
	ctx := stream.Context()
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-s.feed.done:
			return status.Error(codes.Unavailable, "memnode: Watch: the memory node is shutting down")
		case <-sub.wake:
		}
		for _, m := range s.feed.take(sub) {
			if err := stream.Send(m); err != nil {
				return err
			}
		}
	}
}

// publish tells the subscribers of a batch Apply published. Called with
// s.mu held, in height order.
func (s *service) publish(writes []statedb.Write, from, height uint64) {
	at := time.Now().UnixNano()
	if !s.feed.wanted() {
		s.feed.publish(nil, 0, height, at)
		return
	}
	c, size := encodeChange(writes, from, height, at, s.feed.epoch)
	s.feed.publish(c, size, height, at)
}
