package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/orderer"
)

// callLog records the orderer methods a client called and can hold the
// first call until released.
type callLog struct {
	mu      sync.Mutex
	methods []string
	hold    chan struct{} // closed to release the first call; nil: no hold
	held    bool
}

func (l *callLog) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	l.mu.Lock()
	l.methods = append(l.methods, method)
	first := !l.held && l.hold != nil
	l.held = true
	l.mu.Unlock()
	if first {
		<-l.hold
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (l *callLog) calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.methods...)
}

func dialLogged(t *testing.T, addr string, l *callLog) api.OrdererClient {
	t.Helper()
	return api.NewOrdererClient(dial(t, addr, grpc.WithUnaryInterceptor(l.intercept)))
}

// signedTx is a transaction as the orderer admits it: signed by client,
// endorsed by peer (the orderer checks only the creator).
func signedTx(t *testing.T, client, peer *identity.Signer, channel string, i int) []byte {
	t.Helper()
	key := fmt.Sprintf("k%d", i)
	raw, _, err := api.BuildTx(api.TxSpec{Channel: channel, Contract: "smallbank", Function: "deposit_checking",
		Nonce: []byte(fmt.Sprintf("batch-%d-%d", time.Now().UnixNano(), i)), Timestamp: time.Now().UnixNano(),
		RWSet: &api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: "smallbank", Writes: []*api.KVWrite{{Key: key, Value: []byte("1")}}}}},
	}, client, []api.Signer{peer})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// While one call is in flight, the calls that arrive go to the orderer
// as one SubmitBatch, and each caller gets its own transaction's answer:
// a transaction for another channel is refused alone.
func TestBatchSubmits(t *testing.T) {
	n := testnet.Start(t, testnet.Options{})
	client, peer := n.Issue(t, "Org1", "client-batch", identity.RoleClient), n.Issue(t, "Org1", "peer-batch", identity.RolePeer)
	log := &callLog{hold: make(chan struct{})}
	b := gateway.BatchSubmits(dialLogged(t, n.OrdererAddr, log))
	const txs = 40
	type answer struct {
		status int32
		err    error
	}
	answers := make([]answer, txs)
	var wg sync.WaitGroup
	submit := func(i int) {
		defer wg.Done()
		ch := testnet.Channel
		if i == txs-1 {
			ch = "otherch"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := b.Submit(ctx, &api.SubmitRequest{Transaction: signedTx(t, client, peer, ch, i)})
		answers[i] = answer{r.GetStatus(), err}
		if r.GetStatus() != http.StatusOK {
			t.Logf("tx %d: %s", i, r.GetMessage())
		}
	}
	wg.Add(1)
	go submit(0) // its call is held in flight
	for len(log.calls()) == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < txs; i++ {
		wg.Add(1)
		go submit(i)
	}
	waitQueued(t, b, txs-1)
	close(log.hold)
	wg.Wait()
	for i, a := range answers {
		want := int32(http.StatusOK)
		if i == txs-1 {
			want = http.StatusNotFound
		}
		if a.err != nil || a.status != want {
			t.Errorf("tx %d: status %d, err %v; want %d", i, a.status, a.err, want)
		}
	}
	calls := log.calls()
	if len(calls) != 2 || calls[0] != "/strand.api.Orderer/Submit" || calls[1] != "/strand.api.Orderer/SubmitBatch" {
		t.Errorf("calls %v, want one Submit (the first, alone) and one SubmitBatch with the %d that queued behind it", calls, txs-1)
	}
	if m := n.Orderer.Metrics(); m.Admitted != txs-1 || m.Refused.WrongChannel != 1 {
		t.Errorf("orderer admitted %d, refused %d for the channel; want %d and 1", m.Admitted, m.Refused.WrongChannel, txs-1)
	}
}

// waitQueued waits until n calls wait in b's queue.
func waitQueued(t *testing.T, b api.OrdererClient, n int) {
	t.Helper()
	q := b.(interface{ Queued() int })
	deadline := time.Now().Add(30 * time.Second)
	for q.Queued() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", q.Queued(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// submitOnly is an orderer service without SubmitBatch.
type submitOnly struct {
	api.UnimplementedOrdererServer
	o api.OrdererServer
}

func (s submitOnly) Submit(ctx context.Context, r *api.SubmitRequest) (*api.SubmitResponse, error) {
	return s.o.Submit(ctx, r)
}

// An orderer without SubmitBatch gets single Submits: the batch that
// found out is resubmitted one by one, and later calls go singly.
func TestBatchSubmitsFallsBack(t *testing.T) {
	n := testnet.Start(t, testnet.Options{})
	client, peer := n.Issue(t, "Org1", "client-fallback", identity.RoleClient), n.Issue(t, "Org1", "peer-fallback", identity.RolePeer)
	addr := serve(t, func(s *grpc.Server) { api.RegisterOrdererServer(s, submitOnly{o: orderer.NewServer(n.Orderer)}) })
	log := &callLog{hold: make(chan struct{})}
	b := gateway.BatchSubmits(dialLogged(t, addr, log))
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	submit := func(i int) {
		defer wg.Done()
		r, err := b.Submit(context.Background(), &api.SubmitRequest{Transaction: signedTx(t, client, peer, testnet.Channel, i)})
		if err == nil && r.GetStatus() != http.StatusOK {
			err = fmt.Errorf("status %d %s", r.GetStatus(), r.GetMessage())
		}
		if err != nil {
			errs <- fmt.Errorf("tx %d: %w", i, err)
		}
	}
	wg.Add(1)
	go submit(0)
	for len(log.calls()) == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < 5; i++ {
		wg.Add(1)
		go submit(i)
	}
	waitQueued(t, b, 4)
	close(log.hold)
	wg.Wait()
	wg.Add(1)
	submit(5)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m := n.Orderer.Metrics(); m.Admitted != 6 {
		t.Errorf("admitted %d, want 6", m.Admitted)
	}
	calls := log.calls()
	if len(calls) < 3 || calls[1] != "/strand.api.Orderer/SubmitBatch" || calls[len(calls)-1] != "/strand.api.Orderer/Submit" {
		t.Errorf("calls %v: want Submit, one SubmitBatch (Unimplemented), then Submits only", calls)
	}
	for _, c := range calls[2:] {
		if c != "/strand.api.Orderer/Submit" {
			t.Errorf("calls %v: SubmitBatch asked again after Unimplemented", calls)
			break
		}
	}
}
