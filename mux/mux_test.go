package mux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
)

// orderer answers Submit by the transaction's text: "ok", "deny", "wait"
// (until its context ends or release is closed), "deadline" (reports
// whether its context has a deadline).
type orderer struct {
	api.UnimplementedOrdererServer
	release chan struct{}
	calls   atomic.Int64
}

func (o *orderer) Submit(ctx context.Context, req *api.SubmitRequest) (*api.SubmitResponse, error) {
	o.calls.Add(1)
	switch tx := string(req.GetTransaction()); tx {
	case "deny":
		return nil, status.Error(codes.PermissionDenied, "not a writer")
	case "wait":
		select {
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-o.release:
			return &api.SubmitResponse{Status: 200, Message: "released"}, nil
		}
	case "deadline":
		_, ok := ctx.Deadline()
		return &api.SubmitResponse{Status: 200, Message: fmt.Sprint(ok)}, nil
	default:
		return &api.SubmitResponse{Status: 200, Message: tx}, nil
	}
}

// serve starts a gRPC server on lis (a new port if nil) with the orderer
// service, through Mux when withMux, and counts unary calls that arrive
// outside Mux.
func serve(t *testing.T, lis net.Listener, o *orderer, withMux bool) (addr string, unary *atomic.Int64, stop func()) {
	t.Helper()
	if lis == nil {
		var err error
		if lis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	unary = new(atomic.Int64)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		unary.Add(1)
		return h(ctx, req)
	}))
	var reg grpc.ServiceRegistrar = srv
	if withMux {
		reg = NewServer(srv)
	}
	api.RegisterOrdererServer(reg, o)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), unary, srv.Stop
}

func dial(t *testing.T, addr string) *Conn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(cc)
	t.Cleanup(func() { c.Close() })
	return c
}

func submit(ctx context.Context, c *Conn, tx string) (*api.SubmitResponse, error) {
	return api.NewOrdererClient(c).Submit(ctx, &api.SubmitRequest{Transaction: []byte(tx)})
}

func TestCallsGoOverTheStream(t *testing.T) {
	o := &orderer{release: make(chan struct{})}
	addr, unary, _ := serve(t, nil, o, true)
	c := dial(t, addr)
	ctx := context.Background()
	// Calls go unary until the connection reports Ready, which a loaded
	// machine can report a little after the first call went through.
	if r, err := submit(ctx, c, "warm up"); err != nil || r.GetMessage() != "warm up" {
		t.Fatalf("warm-up call: %v, %v", r, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for st := c.cc.GetState(); st != connectivity.Ready; st = c.cc.GetState() {
		if !c.cc.WaitForStateChange(wctx, st) {
			t.Fatalf("the connection is %v after a call and 5 s", st)
		}
	}
	before := unary.Load()
	for i := range 50 {
		r, err := submit(ctx, c, fmt.Sprint("tx", i))
		if err != nil || r.GetMessage() != fmt.Sprint("tx", i) {
			t.Fatalf("call %d: %v, %v", i, r, err)
		}
	}
	if n := unary.Load() - before; n > 0 {
		t.Errorf("%d of 50 calls on a ready connection arrived as unary calls, want none", n)
	}
	_, err := submit(ctx, c, "deny")
	if st := status.Convert(err); st.Code() != codes.PermissionDenied || st.Message() != "not a writer" {
		t.Errorf("deny: %v, want PermissionDenied \"not a writer\"", err)
	}
	err = c.Invoke(ctx, "/strand.api.Orderer/Nope", &api.SubmitRequest{}, &api.SubmitResponse{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("unknown method: %v, want Unimplemented", err)
	}
}

func TestDeadlinesAndOutOfOrderReplies(t *testing.T) {
	o := &orderer{release: make(chan struct{})}
	addr, _, _ := serve(t, nil, o, true)
	c := dial(t, addr)
	if _, err := submit(context.Background(), c, "warm up"); err != nil {
		t.Fatal(err)
	}
	// A waiting call does not hold up the calls after it.
	waited := make(chan error, 1)
	go func() {
		r, err := submit(context.Background(), c, "wait")
		if err == nil && r.GetMessage() != "released" {
			err = fmt.Errorf("reply %v", r)
		}
		waited <- err
	}()
	for o.calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	if _, err := submit(context.Background(), c, "after"); err != nil {
		t.Fatal(err)
	}
	close(o.release)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	// The caller's deadline reaches the handler, and ends the call.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r, err := submit(ctx, c, "deadline"); err != nil || r.GetMessage() != "true" {
		t.Errorf("deadline seen by the handler: %v, %v; want true", r, err)
	}
	if r, err := submit(context.Background(), c, "deadline"); err != nil || r.GetMessage() != "false" {
		t.Errorf("no deadline: handler saw %v, %v; want false", r, err)
	}
	o2 := &orderer{release: make(chan struct{})}
	addr2, _, _ := serve(t, nil, o2, true)
	c2 := dial(t, addr2)
	submit(context.Background(), c2, "warm up")
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := submit(ctx, c2, "wait"); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("wait past the deadline: %v, want DeadlineExceeded", err)
	}
}

func TestServerWithoutMux(t *testing.T) {
	o := &orderer{}
	addr, unary, _ := serve(t, nil, o, false)
	c := dial(t, addr)
	for i := range 10 {
		if r, err := submit(context.Background(), c, "x"); err != nil || r.GetMessage() != "x" {
			t.Fatalf("call %d: %v, %v", i, r, err)
		}
	}
	if n := unary.Load(); n != 10 {
		t.Errorf("%d unary calls, want 10 (every call, since the server has no Mux)", n)
	}
}

func TestBrokenStream(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	o := &orderer{release: make(chan struct{})}
	_, _, stop := serve(t, lis, o, true)
	c := dial(t, addr)
	submit(context.Background(), c, "warm up")
	waited := make(chan error, 1)
	go func() {
		_, err := submit(context.Background(), c, "wait")
		waited <- err
	}()
	for o.calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	go stop() // Stop closes the connections; the handler still waits
	if err := <-waited; status.Code(err) != codes.Unavailable {
		t.Fatalf("call in flight when the server stopped: %v, want Unavailable", err)
	}
	close(o.release)
	// A new server on the same address: calls go through again.
	lis2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen again on %s: %v", addr, err)
	}
	serve(t, lis2, &orderer{}, true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := submit(ctx, c, "again")
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call succeeded after the server came back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConcurrentCalls(t *testing.T) {
	o := &orderer{}
	addr, _, _ := serve(t, nil, o, true)
	c := dial(t, addr)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				tx := fmt.Sprintf("g%d-%d", g, i)
				r, err := submit(context.Background(), c, tx)
				if err == nil && r.GetMessage() != tx {
					err = fmt.Errorf("call %s got the reply of %s", tx, r.GetMessage())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := submit(context.Background(), c, "closed"); err == nil || errors.Is(err, nil) {
		t.Error("a call on a closed Conn succeeded")
	}
}

// openStream makes calls of tx until c's Mux stream is open: calls made
// while the connection is not ready go as plain unary calls.
func openStream(ctx context.Context, t *testing.T, c *Conn, tx string) {
	t.Helper()
	for {
		if _, err := submit(ctx, c, tx); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		open := c.cur != nil
		c.mu.Unlock()
		if open {
			return
		}
	}
}

// holder counts the Submit calls it holds until release is closed, and
// the most it held at once; it answers an empty transaction at once.
type holder struct {
	api.UnimplementedOrdererServer
	release   chan struct{}
	held, max atomic.Int64
}

func (h *holder) Submit(ctx context.Context, req *api.SubmitRequest) (*api.SubmitResponse, error) {
	if len(req.GetTransaction()) == 0 {
		return &api.SubmitResponse{Status: 200}, nil
	}
	n := h.held.Add(1)
	defer h.held.Add(-1)
	for m := h.max.Load(); n > m && !h.max.CompareAndSwap(m, n); m = h.max.Load() {
	}
	select {
	case <-h.release:
		return &api.SubmitResponse{Status: 200}, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// TestInFlightBytes: a Server whose budget is 4 MiB runs at most four
// 1 MiB calls at once, however many a client sends (before the budget,
// all sixteen ran: only the count of calls was bounded), and a request
// larger than the whole budget still runs, alone.
func TestInFlightBytes(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(16 << 20))
	h := &holder{release: make(chan struct{})}
	api.RegisterOrdererServer(NewServerBudget(srv, 4<<20), h)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	c := dial(t, lis.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	openStream(ctx, t, c, "") // calls before it is open go as plain unary calls, outside the budget

	const calls = 16
	tx := make([]byte, 1<<20-64) // with its framing, just under 1 MiB: four fit
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := api.NewOrdererClient(c).Submit(ctx, &api.SubmitRequest{Transaction: tx}); err != nil {
				errs <- err
			}
		}()
	}
	for h.held.Load() < 4 {
		if ctx.Err() != nil {
			t.Fatalf("%d calls held after 30 s, want 4", h.held.Load())
		}
		time.Sleep(time.Millisecond)
	}
	// The other twelve were all sent; give the server the chance to run
	// them, which the budget must refuse.
	time.Sleep(200 * time.Millisecond)
	close(h.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m := h.max.Load(); m != 4 {
		t.Errorf("at most %d calls of 1 MiB ran at once under a 4 MiB budget, want 4", m)
	}

	if _, err := api.NewOrdererClient(c).Submit(ctx, &api.SubmitRequest{Transaction: make([]byte, 6<<20)}); err != nil {
		t.Errorf("a 6 MiB request under a 4 MiB budget: %v, want it run alone", err)
	}
}

// TestOversizedCallSparesTheStream: a request too large for the server
// fails alone, as a plain unary call refused on its length prefix, while
// a call in flight on the same connection's stream carries on. Before,
// it went over the stream, whose receive failure ended the stream and
// failed every call on it: one client's oversized transaction, forwarded
// by a gateway, failed all its clients' submissions to that orderer.
func TestOversizedCallSparesTheStream(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(api.MaxRequestMessage))
	o := &orderer{release: make(chan struct{})}
	api.RegisterOrdererServer(NewServer(srv), o)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20))) // the test orderer echoes the request
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(cc)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	openStream(ctx, t, c, "ok")
	waited := make(chan error, 1)
	before := o.calls.Load()
	go func() {
		_, err := submit(ctx, c, "wait")
		waited <- err
	}()
	for o.calls.Load() == before { // until the wait call is in the handler
		time.Sleep(time.Millisecond)
	}
	over := string(make([]byte, api.MaxRequestMessage)) // its SubmitRequest is a few bytes more
	_, err = submit(ctx, c, over)
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a request over the server's limit: %v, want ResourceExhausted", err)
	}
	under := string(make([]byte, api.MaxRequestMessage-16)) // fits the limit alone, not in a Call
	if _, err := submit(ctx, c, under); err != nil {
		t.Errorf("a request just under the server's limit: %v", err)
	}
	close(o.release)
	if err := <-waited; err != nil {
		t.Errorf("the call in flight when an oversized one was made: %v, want it answered", err)
	}
}
