package memnode

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
)

// Limits bound what clients may hold on a memory node at once, so that
// one compute node (or a misbehaving peer) cannot take the node's
// memory or its goroutines from the others. A client is a client
// certificate's common name: compute nodes that share one share its
// limits. What a call over a limit gets is ResourceExhausted naming the
// limit, at once; nothing waits. Client takes it for load that passes:
// statedb.ErrUnavailable, which the committer waits out. Give compute
// nodes certificates of their own, so that their limits are not the
// committer's.
//
// A client's read streams (Reads, one per Client) are counted apart
// from its calls, against the same MaxCallsPerClient: a stream is
// served one message at a time, so it holds what one call holds, and
// the stream a Client keeps open never takes a slot its scans need.
//
// Apply is not counted: only the writer's are served (one at a time,
// under the service's lock) and the rest are refused before any work,
// so readers sharing the writer's name never starve its committer.
//
// Memory the node may hold for clients, beyond the tiers: running calls
// (at most clients × MaxCallsPerClient, each one request and one answer
// of at most MaxMessageBytes, a Scan a page of at most 1 MiB ahead) and
// the Watch backlogs (at most MaxWatches × WatchBufferBytes).
type Limits struct {
	// MaxCallsPerClient bounds one client's running GetMany, Scan and
	// Savepoint calls, and apart from them its read streams. Default 64;
	// 1 to 65536.
	MaxCallsPerClient int
	// MaxWatchesPerClient bounds one client's Watch streams. Default 8;
	// 1 to 65536.
	MaxWatchesPerClient int
	// MaxWatches bounds the Watch streams of all clients. Default 256;
	// 1 to 65536.
	MaxWatches int
}

// Limits' defaults.
const (
	DefaultMaxCallsPerClient   = 64
	DefaultMaxWatchesPerClient = 8
	DefaultMaxWatches          = 256
	maxLimit                   = 1 << 16
)

// EnsureDefaults replaces zero fields with their defaults.
func (l *Limits) EnsureDefaults() {
	if l.MaxCallsPerClient == 0 {
		l.MaxCallsPerClient = DefaultMaxCallsPerClient
	}
	if l.MaxWatchesPerClient == 0 {
		l.MaxWatchesPerClient = DefaultMaxWatchesPerClient
	}
	if l.MaxWatches == 0 {
		l.MaxWatches = DefaultMaxWatches
	}
}

// Validate reports the first field out of its range.
func (l *Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"MaxCallsPerClient", l.MaxCallsPerClient}, {"MaxWatchesPerClient", l.MaxWatchesPerClient}, {"MaxWatches", l.MaxWatches}} {
		if f.v < 1 || f.v > maxLimit {
			return fmt.Errorf("memnode: Limits.%s = %d: want 1 to %d (0 means the default)", f.name, f.v, maxLimit)
		}
	}
	return nil
}

// limiter counts each client's running calls and Watch streams.
type limiter struct {
	lim Limits
	mu  struct {
		sync.Mutex
		calls, watches, reads map[string]int
		allWatches            int
	}
	refused atomic.Uint64
}

func newLimiter(l Limits) *limiter {
	lt := &limiter{lim: l}
	lt.mu.calls, lt.mu.watches, lt.mu.reads = make(map[string]int), make(map[string]int), make(map[string]int)
	return lt
}

// enter admits a call of method by caller or refuses it naming the
// limit; an admitted call calls the returned release when it ends.
func (lt *limiter) enter(method, caller string, watch bool) (release func(), err error) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	counts, max, what, field := lt.mu.calls, lt.lim.MaxCallsPerClient, "calls", "maxCallsPerClient"
	if method == api.MemoryNode_Reads_FullMethodName {
		counts, what = lt.mu.reads, "read streams"
	}
	if watch {
		counts, max, what, field = lt.mu.watches, lt.lim.MaxWatchesPerClient, "Watch streams", "maxWatchesPerClient"
		if lt.mu.allWatches >= lt.lim.MaxWatches {
			lt.refused.Add(1)
			return nil, status.Errorf(codes.ResourceExhausted, "memnode: %s from %q refused: the node serves %d Watch streams, its limit (maxWatches)", method, caller, lt.mu.allWatches)
		}
	}
	if n := counts[caller]; n >= max {
		lt.refused.Add(1)
		return nil, status.Errorf(codes.ResourceExhausted, "memnode: %s from %q refused: it has %d %s running, its limit (%s); retry when one has ended", method, caller, n, what, field)
	}
	counts[caller]++
	if watch {
		lt.mu.allWatches++
	}
	return func() {
		lt.mu.Lock()
		defer lt.mu.Unlock()
		if counts[caller]--; counts[caller] == 0 {
			delete(counts, caller)
		}
		if watch {
			lt.mu.allWatches--
		}
	}, nil
}

// unary is the limiter's gRPC unary interceptor.
func (lt *limiter) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod == api.MemoryNode_Apply_FullMethodName {
		return handler(ctx, req)
	}
	release, err := lt.enter(info.FullMethod, callerOf(ctx), false)
	if err != nil {
		return nil, err
	}
	defer release()
	return handler(ctx, req)
}

// stream is the limiter's gRPC stream interceptor. The release runs
// before the call's status is sent: a client that saw a stream end may
// start another.
func (lt *limiter) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	release, err := lt.enter(info.FullMethod, callerOf(ss.Context()), info.FullMethod == api.MemoryNode_Watch_FullMethodName)
	if err != nil {
		return err
	}
	defer release()
	return handler(srv, ss)
}
