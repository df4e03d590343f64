package external

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/internal/grpctune"
)

// Version is the protocol version this package speaks.
const Version = 1

// conn is the peer's connection to one contract server: a gRPC client
// connection (which redials by itself) and at most one live session, the
// Connect stream every call is multiplexed on.
type conn struct {
	r   *Runtime
	pkg *Package
	cc  *grpc.ClientConn

	mu struct {
		sync.Mutex
		sess   *session // nil or live; a failed one is replaced
		closed bool
	}
}

func dial(r *Runtime, p *Package) (*conn, error) {
	bo := backoff.DefaultConfig
	bo.BaseDelay, bo.MaxDelay = 50*time.Millisecond, time.Second // a restarted server is found again within a second
	opts := append(grpctune.DialOptions(),
		grpc.WithTransportCredentials(credentials.NewTLS(clientTLS(r.opts.Client, p))),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: r.opts.Timeout}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(r.opts.MaxMessageBytes), grpc.MaxCallSendMsgSize(r.opts.MaxMessageBytes)))
	cc, err := grpc.NewClient("passthrough:///"+p.Address, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, p.Address, err)
	}
	return &conn{r: r, pkg: p, cc: cc}, nil
}

func (c *conn) close() error {
	c.mu.Lock()
	c.mu.closed = true
	s := c.mu.sess
	c.mu.Unlock()
	if s != nil {
		s.fail(ErrClosed)
	}
	return c.cc.Close()
}

// session returns the live session, opening one if there is none, and
// waits until the server answered its hello or expired fires.
func (c *conn) session(expired <-chan time.Time) (*session, error) {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	s := c.mu.sess
	if s == nil || s.failed() != nil {
		s = c.open()
		c.mu.sess = s
	}
	c.mu.Unlock()
	select {
	case <-s.ready:
	case <-expired:
		return nil, fmt.Errorf("%w: %s did not answer the protocol's hello within %v", ErrUnreachable, c.pkg.Address, c.r.opts.Timeout)
	}
	if err := s.failed(); err != nil {
		return nil, err
	}
	return s, nil
}

// open starts a session: the stream is opened and the hello exchanged in
// the background, so that a server that does not answer holds no caller
// past its deadline.
func (c *conn) open() *session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{c: c, cancel: cancel, ready: make(chan struct{})}
	s.mu.calls = map[uint64]*inbox{}
	c.r.m.connects.Add(1)
	go s.run(ctx)
	return s
}

// session is one Connect stream and the calls multiplexed on it.
type session struct {
	c      *conn
	cancel context.CancelFunc
	ready  chan struct{} // closed when the hello is answered or the session failed

	sendMu sync.Mutex
	stream api.Contract_ConnectClient

	mu struct {
		sync.Mutex
		calls map[uint64]*inbox
		next  uint64
		err   error // why the session ended; nil while it is live
	}
}

// run opens the stream, exchanges hellos and then receives until the
// stream breaks, handing each message to its call's inbox.
func (s *session) run(ctx context.Context) {
	stream, err := api.NewContractClient(s.c.cc).Connect(ctx)
	if err == nil {
		s.stream = stream
		err = stream.Send(&api.ContractRequest{Kind: &api.ContractRequest_Hello{Hello: &api.ContractHello{Version: Version}}})
	}
	if err == nil {
		err = s.hello(stream)
	}
	if err != nil {
		if !errors.Is(err, ErrProtocol) {
			err = fmt.Errorf("%w: %s: %v", ErrUnreachable, s.c.pkg.Address, err)
		}
		s.fail(err)
		close(s.ready)
		return
	}
	close(s.ready)
	for {
		msg, err := stream.Recv()
		if err != nil {
			s.fail(fmt.Errorf("%w: %s: %v", ErrConnLost, s.c.pkg.Address, err))
			return
		}
		s.deliver(msg)
	}
}

// hello waits for the server's hello and checks its version.
func (s *session) hello(stream api.Contract_ConnectClient) error {
	msg, err := stream.Recv()
	if err != nil {
		return err
	}
	h := msg.GetHello()
	switch {
	case h == nil || msg.Call != 0:
		return fmt.Errorf("%w: %s answered the hello with %s, want a hello of call 0", ErrProtocol, s.c.pkg.Address, kindOf(msg))
	case h.Version != Version:
		return fmt.Errorf("%w: %s speaks protocol version %d, this peer speaks %d", ErrProtocol, s.c.pkg.Address, h.Version, Version)
	}
	return nil
}

// fail ends the session with err (the first error wins) and every call
// on it.
func (s *session) fail(err error) {
	s.mu.Lock()
	if s.mu.err != nil {
		s.mu.Unlock()
		return
	}
	s.mu.err = err
	calls := s.mu.calls
	s.mu.calls = nil
	s.mu.Unlock()
	s.cancel()
	for _, in := range calls {
		in.fail(err)
	}
}

func (s *session) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.err
}

// register starts a call on the session.
func (s *session) register() (uint64, *inbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.err != nil {
		return 0, nil, s.mu.err
	}
	s.mu.next++
	in := &inbox{signal: make(chan struct{}, 1), limit: s.c.r.opts.MaxQueuedBytes}
	s.mu.calls[s.mu.next] = in
	return s.mu.next, in, nil
}

func (s *session) unregister(id uint64) {
	s.mu.Lock()
	delete(s.mu.calls, id)
	s.mu.Unlock()
}

// deliver hands msg to its call; a message of no live call is dropped
// (a call the peer cancelled may still be talking).
func (s *session) deliver(msg *api.ContractReply) {
	s.mu.Lock()
	in := s.mu.calls[msg.Call]
	s.mu.Unlock()
	if in != nil {
		in.push(msg)
	}
}

// send sends one message; a failure ends the session.
func (s *session) send(m *api.ContractRequest) error {
	s.sendMu.Lock()
	err := s.stream.Send(m)
	s.sendMu.Unlock()
	if err != nil {
		err = fmt.Errorf("%w: %s: sending: %v", ErrConnLost, s.c.pkg.Address, err)
		s.fail(err)
		return err
	}
	return nil
}

// inbox is one call's queue of messages from the server. It is unbounded
// in count, since put, del and event are not answered and a server may
// send many before the call's goroutine runs them, but bounded in bytes.
type inbox struct {
	signal chan struct{} // one token: something to take
	limit  int

	mu    sync.Mutex
	q     []*api.ContractReply
	bytes int
	err   error
}

func (in *inbox) push(m *api.ContractReply) {
	in.mu.Lock()
	if in.err == nil {
		in.bytes += approxSize(m)
		if in.bytes > in.limit {
			in.err = fmt.Errorf("%w: the server queued %d bytes of requests for one call, over the %d bytes a call may queue", ErrProtocol, in.bytes, in.limit)
		} else {
			in.q = append(in.q, m)
		}
	}
	in.mu.Unlock()
	in.wake()
}

func (in *inbox) fail(err error) {
	in.mu.Lock()
	if in.err == nil {
		in.err = err
	}
	in.mu.Unlock()
	in.wake()
}

func (in *inbox) wake() {
	select {
	case in.signal <- struct{}{}:
	default:
	}
}

// take returns the queued messages, or the inbox's error once they are
// all taken.
func (in *inbox) take(buf []*api.ContractReply) ([]*api.ContractReply, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.q) == 0 {
		return buf, in.err
	}
	buf = append(buf, in.q...)
	clear(in.q)
	in.q, in.bytes = in.q[:0], 0
	return buf, nil
}

// approxSize is what a message holds in memory, near enough.
func approxSize(m *api.ContractReply) int {
	const overhead = 64
	switch r := m.GetState().GetOp().(type) {
	case *api.ContractStateRequest_Put:
		return overhead + len(r.Put.GetKey()) + len(r.Put.GetValue())
	case *api.ContractStateRequest_Event:
		return overhead + len(r.Event.GetName()) + len(r.Event.GetPayload())
	case *api.ContractStateRequest_GetMulti:
		n := overhead
		for _, k := range r.GetMulti.GetKeys() {
			n += len(k) + 16
		}
		return n
	}
	return overhead + len(m.GetResult().GetPayload()) + len(m.GetResult().GetMessage()) + len(m.GetState().GetGet().GetKey())
}
