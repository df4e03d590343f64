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

// Server serves the unary methods of the services registered through it
// over api.Mux. Register every service before the gRPC server serves.
type Server struct {
	api.UnimplementedMuxServer
	srv     *grpc.Server
	methods map[string]method // written by RegisterService only, before serving
	pool    gopool.Pool       // runs the calls, on goroutines whose stacks have grown
}

type method struct {
	impl    any
	handler grpc.MethodHandler
}

// NewServer registers the Mux service on srv and returns the registrar
// through which the other services must be registered.
func NewServer(srv *grpc.Server) *Server {
	s := &Server{srv: srv, methods: map[string]method{}}
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
		wg.Add(1)
		s.pool.Go(func() {
			r := s.invoke(ctx, c)
			sendMu.Lock()
			if sendErr == nil {
				sendErr = stream.Send(r)
			}
			sendMu.Unlock()
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
