package node

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
)

// fakeOrderer answers Deliver(start, stop) as an orderer of height
// blocks would, or fails with down.
type fakeOrderer struct {
	api.OrdererClient
	height uint64
	down   bool
}

func (f *fakeOrderer) Deliver(ctx context.Context, in *api.DeliverRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[api.DeliverResponse], error) {
	if f.down {
		return nil, status.Error(codes.Unavailable, "connection refused")
	}
	return &fakeStream{has: in.GetStart() < f.height}, nil
}

func (f *fakeOrderer) String() string { return "fake" }

type fakeStream struct {
	grpc.ClientStream
	has bool
}

func (s *fakeStream) Recv() (*api.DeliverResponse, error) {
	if s.has {
		s.has = false
		return &api.DeliverResponse{Block: []byte{1}}, nil
	}
	return nil, io.EOF
}

// TestPeerReadiness: a peer is ready within readyLag blocks of the
// furthest orderer that answers; behind that, with no orderer answering,
// or after it stopped following, it is not, and says why.
func TestPeerReadiness(t *testing.T) {
	stopped := errors.New("committer: failed: disk full")
	for _, c := range []struct {
		name     string
		next     uint64
		orderers []*fakeOrderer
		stopped  error
		want     string // "" for ready
	}{
		{"caught up", 10, []*fakeOrderer{{height: 10}, {height: 10}}, nil, ""},
		{"a few blocks behind", 10, []*fakeOrderer{{height: 10 + readyLag - 1}}, nil, ""},
		{"one orderer down", 10, []*fakeOrderer{{down: true}, {height: 10}}, nil, ""},
		{"far behind", 10, []*fakeOrderer{{height: 10}, {height: 10 + readyLag}}, nil, "catching up: at height 10, and orderer fake has block 59"},
		{"no orderer answers", 10, []*fakeOrderer{{down: true}, {down: true}}, nil, "no orderer answered"},
		{"stopped following", 10, []*fakeOrderer{{height: 10}}, stopped, "stopped following the ordering service (restart it): committer: failed: disk full"},
	} {
		pr := &peerReadiness{channel: "ch", next: func() uint64 { return c.next }, orderers: func() []api.OrdererClient {
			out := make([]api.OrdererClient, len(c.orderers))
			for i, o := range c.orderers {
				out[i] = o
			}
			return out
		}}
		if c.stopped != nil {
			pr.stopped.Store(&c.stopped)
		}
		err := pr.ready(context.Background())
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: ready = %v, want %q (empty: nil)", c.name, err, c.want)
		}
	}
}
