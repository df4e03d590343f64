package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/policy"
)

// slowStream is a BlockEvents stream whose client reads slowly.
type slowStream struct {
	grpc.ServerStream
	ctx   context.Context
	delay time.Duration
	mu    sync.Mutex
	got   []uint64
}

func (s *slowStream) Context() context.Context { return s.ctx }

func (s *slowStream) Send(ev *api.BlockEvent) error {
	time.Sleep(s.delay)
	s.mu.Lock()
	s.got = append(s.got, ev.Number)
	s.mu.Unlock()
	return nil
}

func (s *slowStream) received() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint64(nil), s.got...)
}

// TestBlockEventsLagged streams to a slow client over a one-event
// subscription, so that the committer cuts it off; the stream must resume
// from the block store without a gap or a duplicate.
func TestBlockEventsLagged(t *testing.T) {
	n := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := n.Peers[0]
	gw := oneEventGateway(t, n)
	sctx, stop := context.WithCancel(ctx)
	s := &slowStream{ctx: sctx, delay: 60 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- gw.BlockEvents(&api.BlockEventsRequest{Start: 0}, s) }()

	user := n.Issue(t, "Org1", "user", identity.RoleClient)
	client := gatewayClient(t, p.Addr)
	for i := 0; i < 12; i++ {
		submit(t, ctx, client, user, "create_account", string(rune('a'+i)), "x", "1", "1")
	}
	height := p.Committer.Height()
	for len(s.received()) < int(height) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err == nil {
		t.Error("BlockEvents returned nil after its client went away, want the context's error")
	}
	got := s.received()
	for i, num := range got {
		if num != uint64(i) {
			t.Fatalf("blocks sent %v: block %d at position %d, want every block once in order", got, num, i)
		}
	}
	if len(got) < int(height) {
		t.Fatalf("sent %d blocks, want %d", len(got), height)
	}
	if m := gw.Metrics(); m.Lagged == 0 {
		t.Errorf("metrics %s: the subscription never lagged; the test did not exercise the resume", m)
	}
}

// TestCommitStatusManyWaiters: many CommitStatus calls wait at once on one
// gateway (whose commit-event subscription holds a single event); its one
// dispatcher must give every call its code.
func TestCommitStatusManyWaiters(t *testing.T) {
	n := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := n.Peers[0]
	gw := oneEventGateway(t, n)
	user := n.Issue(t, "Org1", "user", identity.RoleClient)
	client := gatewayClient(t, p.Addr)
	const calls = 40
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := 0; i < calls; i++ {
		id := endorseAndSubmit(t, ctx, client, user, "create_account", "lag"+string(rune('A'+i)), "x", "1", "1")
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := gw.CommitStatus(ctx, &api.CommitStatusRequest{TxId: id})
			switch {
			case err != nil:
				errs <- err
			case cs.Code != api.TxValidationCode_VALID:
				errs <- fmt.Errorf("tx %s: %v", id, cs.Code)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// endorseAndSubmit endorses, signs and submits without waiting for the
// commit; it returns the tx id.
func endorseAndSubmit(t *testing.T, ctx context.Context, gw api.GatewayClient, s *identity.Signer, fn string, args ...string) string {
	t.Helper()
	er, err := gw.Endorse(ctx, proposal(t, s, smallbank.Name, fn, args...))
	if err != nil || er.Status != 200 {
		t.Fatalf("Endorse %s: %v %d %s", fn, err, er.GetStatus(), er.GetMessage())
	}
	tp := new(api.TxPayload)
	if err := proto.Unmarshal(er.Payload, tp); err != nil {
		t.Fatal(err)
	}
	sig, _ := s.Sign(er.Payload)
	raw, _ := proto.Marshal(&api.Transaction{Payload: er.Payload, Signature: sig})
	if sr, err := gw.Submit(ctx, &api.SubmitRequest{Transaction: raw}); err != nil || sr.Status != 200 {
		t.Fatalf("Submit %s: %v %d %s", fn, err, sr.GetStatus(), sr.GetMessage())
	}
	return tp.Header.TxId
}

// oneEventGateway is a second gateway on the first peer whose commit-event
// subscriptions hold a single event, so that they lag easily.
func oneEventGateway(t *testing.T, n *testnet.Network) *gateway.Gateway {
	t.Helper()
	p := n.Peers[0]
	gw, err := gateway.New(gateway.Config{Channel: testnet.Channel, LocalOrg: "Org1", Local: p.Endorser,
		Remote:   map[string][]api.EndorserClient{"Org2": {api.NewEndorserClient(dial(t, n.Peers[1].Addr))}},
		Policies: map[string]*policy.Policy{smallbank.Name: policy.MustParse("AND('Org1.peer','Org2.peer')")},
		Orderers: []api.OrdererClient{api.NewOrdererClient(dial(t, n.OrdererAddr))},
		Ledger:   gateway.PeerLedger(p.Store, p.Committer), Blocks: p.Store, EventBuffer: 1})
	if err != nil {
		t.Fatal(err)
	}
	return gw
}
