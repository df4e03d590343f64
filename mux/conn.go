package mux

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
)

// Conn carries unary calls over one api.Mux stream on a gRPC connection;
// streaming calls go to the connection as they are. It is safe for
// concurrent use.
type Conn struct {
	cc     *grpc.ClientConn
	plain  atomic.Bool // the server has no Mux: unary calls only
	mu     sync.Mutex
	cur    *stream // nil until the first call, and after a break
	closed bool
}

// NewConn wraps cc. Closing the Conn closes cc.
func NewConn(cc *grpc.ClientConn) *Conn { return &Conn{cc: cc} }

// Close ends the stream and closes the connection.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	if c.cur != nil {
		c.cur.cancel()
		c.cur = nil
	}
	c.mu.Unlock()
	return c.cc.Close()
}

// NewStream opens a streaming call on the connection itself.
func (c *Conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.cc.NewStream(ctx, desc, method, opts...)
}

// largeRequest is the size above which a request goes as a plain unary
// call: a Call of it, with its method name, id and deadline (a few dozen
// bytes), could exceed api.MaxRequestMessage, the receive limit of the
// servers that face clients and peers. gRPC refuses an oversized message
// on a stream by ending the stream, so over Mux one caller's oversized
// request would fail every call in flight on the connection (a gateway's
// connection to an orderer carries all its clients' submissions); alone
// on a unary call, only that call is refused.
const largeRequest = api.MaxRequestMessage - 1<<10

// Invoke makes a unary call over the stream. Calls with call options
// (other than the StaticMethod that generated clients add) go as plain
// unary calls, since the stream cannot honour them, and so do requests
// over largeRequest.
func (c *Conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	in, ok1 := args.(proto.Message)
	out, ok2 := reply.(proto.Message)
	if !onlyStatic(opts) || c.plain.Load() || !ok1 || !ok2 {
		return c.cc.Invoke(ctx, method, args, reply, opts...)
	}
	body, err := proto.Marshal(in)
	if err != nil {
		return status.Errorf(codes.Internal, "mux: encoding the request of %s: %v", method, err)
	}
	if len(body) > largeRequest {
		return c.cc.Invoke(ctx, method, args, reply, opts...)
	}
	s, err := c.stream()
	if err != nil {
		return err
	}
	if s == nil { // not connected yet: a unary call waits as gRPC would
		return c.cc.Invoke(ctx, method, args, reply)
	}
	call := &api.Call{Method: method, Request: body}
	if d, ok := ctx.Deadline(); ok {
		us := time.Until(d).Microseconds()
		if us <= 0 {
			return status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
		}
		call.TimeoutUs = us
	}
	ch := s.register(call)
	if ch == nil { // the stream broke since c.stream returned it
		if c.plain.Load() { // refused as Unimplemented: the server has no Mux
			return c.cc.Invoke(ctx, method, args, reply)
		}
		return s.failure()
	}
	// A failed send means the stream is done: its receiver gets the real
	// status (perhaps Unimplemented, which makes this call fall back) and
	// fails every waiting call, this one included.
	_ = s.send(call)
	select {
	case r := <-ch:
		if r.fallback {
			return c.cc.Invoke(ctx, method, args, reply)
		}
		if r.err != nil {
			return r.err
		}
		if r.reply.GetCode() != 0 {
			return status.Error(codes.Code(r.reply.GetCode()), r.reply.GetMessage())
		}
		if err := proto.Unmarshal(r.reply.GetResponse(), out); err != nil {
			return status.Errorf(codes.Internal, "mux: the reply of %s does not decode as %T: %v", method, out, err)
		}
		return nil
	case <-ctx.Done():
		s.unregister(call.Id)
		return status.FromContextError(ctx.Err()).Err()
	}
}

// stream returns the open stream, opening one if there is none, or nil
// while the connection is not ready: opening a stream then would block
// without regard to the caller's deadline.
func (c *Conn) stream() (*stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, status.Error(codes.Canceled, "mux: the connection is closed")
	}
	if c.cur != nil && !c.cur.isBroken() {
		return c.cur, nil
	}
	if c.cc.GetState() != connectivity.Ready {
		c.cc.Connect()
		return nil, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, err := api.NewMuxClient(c.cc).Calls(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &stream{conn: c, st: st, cancel: cancel, waiting: map[uint64]chan result{}}
	c.cur = s
	go s.receive()
	return s, nil
}

// result is what a waiting call gets: a reply, an error, or the word
// that the server has no Mux and the call must go as a unary call.
type result struct {
	reply    *api.Reply
	err      error
	fallback bool
}

// stream is one open Mux.Calls stream and the calls waiting on it.
type stream struct {
	conn   *Conn
	st     grpc.BidiStreamingClient[api.Call, api.Reply]
	cancel context.CancelFunc
	sendMu sync.Mutex

	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan result
	err     error // set once, when the stream breaks
	replied bool  // a reply arrived, so the server has Mux
}

// register gives call an id and returns where its result will arrive,
// or nil if the stream is broken.
func (s *stream) register(call *api.Call) chan result {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil
	}
	s.next++
	call.Id = s.next
	ch := make(chan result, 1)
	s.waiting[call.Id] = ch
	return ch
}

func (s *stream) unregister(id uint64) {
	s.mu.Lock()
	delete(s.waiting, id)
	s.mu.Unlock()
}

func (s *stream) send(call *api.Call) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.st.Send(call)
}

func (s *stream) isBroken() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil
}

func (s *stream) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// receive hands each reply to its caller until the stream breaks.
func (s *stream) receive() {
	for {
		r, err := s.st.Recv()
		if err != nil {
			s.broken(err)
			return
		}
		s.mu.Lock()
		s.replied = true
		ch, ok := s.waiting[r.GetId()]
		delete(s.waiting, r.GetId())
		s.mu.Unlock()
		if ok {
			ch <- result{reply: r}
		}
	}
}

// broken records the stream's failure (the first one wins), fails every
// waiting call, and returns the error calls should see. A stream that the
// server refused as Unimplemented before any reply turns the Conn to
// plain unary calls, and its waiting calls are retried that way.
func (s *stream) broken(cause error) error {
	s.mu.Lock()
	if s.err == nil {
		fallback := !s.replied && status.Code(cause) == codes.Unimplemented
		if fallback {
			s.conn.plain.Store(true)
		}
		s.err = unavailable(cause)
		for id, ch := range s.waiting {
			ch <- result{err: s.err, fallback: fallback}
			delete(s.waiting, id)
		}
	}
	err := s.err
	s.mu.Unlock()
	s.cancel()
	return err
}

// unavailable is the error of a call whose stream broke.
func unavailable(cause error) error {
	if errors.Is(cause, context.Canceled) {
		return status.Error(codes.Canceled, "mux: the connection is closed")
	}
	st := status.Convert(cause)
	if st.Code() == codes.Unavailable || st.Code() == codes.Unimplemented {
		return st.Err()
	}
	return status.Error(codes.Unavailable, fmt.Sprintf("mux: the call stream broke: %v", cause))
}

// onlyStatic reports whether opts hold nothing but grpc.StaticMethod.
func onlyStatic(opts []grpc.CallOption) bool {
	for _, o := range opts {
		if _, ok := o.(grpc.StaticMethodCallOption); !ok {
			return false
		}
	}
	return true
}
