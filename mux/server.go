package mux

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/internal/gopool"
)

// MaxInFlight bounds the calls one stream runs at once.
const MaxInFlight = 4096

// MaxInFlightBytes is the default byte budget of a Server: the requests of
// the calls it runs at once, over all its streams, hold at most this many
// bytes. A count alone bounds nothing: 4,096 calls of api.MaxTxBytes each
// are 16 GiB.
const MaxInFlightBytes = 256 << 20

// Server serves the unary methods of the services registered through it
// over api.Mux. Register every service before the gRPC server serves.
type Server struct {
	api.UnimplementedMuxServer
	srv     *grpc.Server
	methods map[string]method // written by RegisterService only, before serving
	pool    gopool.Pool       // runs the calls, on goroutines whose stacks have grown
	budget  *budget           // bytes of requests in flight, over all streams
}

type method struct {
	impl    any
	handler grpc.MethodHandler
}

// NewServer registers the Mux service on srv and returns the registrar
// through which the other services must be registered. Its calls in
// flight hold at most MaxInFlightBytes of requests.
func NewServer(srv *grpc.Server) *Server { return NewServerBudget(srv, MaxInFlightBytes) }

// NewServerBudget is NewServer with a budget of maxBytes of requests in
// flight. A request larger than the whole budget waits until nothing else
// is in flight, then runs alone.
func NewServerBudget(srv *grpc.Server, maxBytes int) *Server {
	s := &Server{srv: srv, methods: map[string]method{}, budget: newBudget(maxBytes)}
	api.RegisterMuxServer(srv, s)
	return s
}

// RegisterService registers impl on the gRPC server and records its unary
// methods for Mux.
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	s.srv.RegisterService(desc, impl)
	for _, m := range desc.Methods {
		s.methods["/"+desc.ServiceName+"/"+m.MethodName] = method{impl: impl, handler: m.Handler}
	}
}

// Calls serves one client's stream of calls.
func (s *Server) Calls(stream grpc.BidiStreamingServer[api.Call, api.Reply]) error {
	ctx := stream.Context()
	var (
		wg      sync.WaitGroup
		sendMu  sync.Mutex
		sendErr error
		slots   = make(chan struct{}, MaxInFlight)
	)
	defer wg.Wait()
	for {
		c, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
		// Until the call's request fits the budget this stream reads no
		// further, and HTTP/2 flow control holds its client back.
		size := len(c.GetRequest())
		if err := s.budget.acquire(ctx, size); err != nil {
			<-slots
			return status.FromContextError(err).Err()
		}
		wg.Add(1)
		s.pool.Go(func() {
			r := s.invoke(ctx, c)
			sendMu.Lock()
			if sendErr == nil {
				sendErr = stream.Send(r)
			}
			sendMu.Unlock()
			s.budget.release(size)
			<-slots
			wg.Done()
		})
	}
}

// invoke runs one call and turns its outcome into a Reply.
func (s *Server) invoke(ctx context.Context, c *api.Call) *api.Reply {
	m, ok := s.methods[c.GetMethod()]
	if !ok {
		return &api.Reply{Id: c.GetId(), Code: uint32(codes.Unimplemented),
			Message: fmt.Sprintf("mux: this server has no unary method %q", c.GetMethod())}
	}
	if t := c.GetTimeoutUs(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Microsecond)
		defer cancel()
	}
	dec := func(v any) error {
		msg, ok := v.(proto.Message)
		if !ok {
			return status.Errorf(codes.Internal, "mux: %s takes a %T, not a protobuf message", c.GetMethod(), v)
		}
		if err := proto.Unmarshal(c.GetRequest(), msg); err != nil {
			return status.Errorf(codes.InvalidArgument, "mux: %s: the request does not decode as %T: %v", c.GetMethod(), v, err)
		}
		return nil
	}
	resp, err := m.handler(m.impl, ctx, dec, nil)
	if err == nil {
		var b []byte
		if b, err = proto.Marshal(resp.(proto.Message)); err == nil {
			return &api.Reply{Id: c.GetId(), Response: b}
		}
	}
	st := status.Convert(err)
	return &api.Reply{Id: c.GetId(), Code: uint32(st.Code()), Message: st.Message()}
}

// budget is a number of bytes that calls in flight may hold, shared by
// every stream of a Server.
type budget struct {
	max int
	mu  struct {
		sync.Mutex
		used int
		// wake is closed, and replaced, when bytes are released while
		// an acquire waits (waiting).
		wake    chan struct{}
		waiting bool
	}
}

func newBudget(max int) *budget {
	b := &budget{max: max}
	b.mu.wake = make(chan struct{})
	return b
}

// acquire waits until n bytes are free and takes them, or returns the
// context's error. n over the whole budget is taken as the whole budget.
func (b *budget) acquire(ctx context.Context, n int) error {
	n = min(n, b.max)
	for {
		b.mu.Lock()
		if b.mu.used+n <= b.max {
			b.mu.used += n
			b.mu.Unlock()
			return nil
		}
		wake := b.mu.wake
		b.mu.waiting = true
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives back n bytes that acquire took.
func (b *budget) release(n int) {
	b.mu.Lock()
	b.mu.used -= min(n, b.max)
	if b.mu.waiting {
		close(b.mu.wake)
		b.mu.wake, b.mu.waiting = make(chan struct{}), false
	}
	b.mu.Unlock()
}
