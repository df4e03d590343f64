package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
)

func connect(t *testing.T, addr string, s *identity.Signer) *client.Gateway {
	t.Helper()
	g, err := client.Connect(addr, s, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func committed(t *testing.T) func(*client.Commit, error) *client.Commit {
	return func(c *client.Commit, err error) *client.Commit {
		t.Helper()
		return mustCommit(t, c, err)
	}
}

func mustCommit(t *testing.T, c *client.Commit, err error) *client.Commit {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if c.Code != api.TxValidationCode_VALID {
		t.Fatalf("tx %s: code %s, want VALID", c.TxID, c.Code)
	}
	return c
}

func balance(t *testing.T, ctx context.Context, bank *client.Contract, id string) smallbank.Balance {
	t.Helper()
	raw, err := bank.Evaluate(ctx, "query", id)
	if err != nil {
		t.Fatal(err)
	}
	var b smallbank.Balance
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("query %s: %q: %v", id, raw, err)
	}
	return b
}

// TestSmallbank runs Smallbank through the SDK, a peer's gateway, both
// orgs' endorsers and the real orderer, all over gRPC.
func TestSmallbank(t *testing.T) {
	net := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	user := net.Issue(t, "Org1", "user1", identity.RoleClient)
	bank := connect(t, net.Peers[0].Addr, user).Contract(testnet.Channel, smallbank.Name)
	// A client of Org2 through Org2's gateway sees the same state.
	bank2 := connect(t, net.Peers[1].Addr, net.Issue(t, "Org2", "user2", identity.RoleClient)).Contract(testnet.Channel, smallbank.Name)

	must := committed(t)
	var txIDs []string
	add := func(c *client.Commit) { txIDs = append(txIDs, c.TxID) }
	alice := must(bank.Submit(ctx, "create_account", "alice", "Alice", "1000", "500"))
	// Submit waits in one call; the gateway says when the orderer admitted it.
	if alice.Admitted <= 0 || alice.Admitted > time.Minute {
		t.Errorf("Submit: Commit.Admitted = %v, want the gateway's time to admission", alice.Admitted)
	}
	add(alice)
	add(must(bank2.Submit(ctx, "create_account", "bob", "Bob", "200", "0")))
	// Committed on Org2's peer; Org1's gateway endorses next.
	net.WaitHeight(t, net.Peers[1].Committer.Height(), 10*time.Second)
	add(must(bank.Submit(ctx, "send_payment", "alice", "bob", "100")))

	// Two transactions endorsed on the same state: whichever is ordered
	// second read alice's checking at a version the first changed.
	tx1, err := bank.Endorse(ctx, "deposit_checking", "alice", "50")
	if err != nil {
		t.Fatal(err)
	}
	tx2, err := bank.Endorse(ctx, "deposit_checking", "alice", "70")
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range []*client.Transaction{tx1, tx2} {
		if err := tx.Submit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	deposited := int64(0)
	conflicts := 0
	for i, tx := range []*client.Transaction{tx1, tx2} {
		c, err := tx.Wait(ctx)
		var ce *client.CommitError
		switch {
		case err == nil:
			deposited += []int64{50, 70}[i]
			add(c)
		case errors.As(err, &ce) && ce.Code == api.TxValidationCode_MVCC_READ_CONFLICT:
			conflicts++
			if !ce.Retryable() || !strings.Contains(ce.Error(), "run it again") || c == nil || c.Block != ce.Block {
				t.Errorf("conflict error %v (commit %+v): want a retryable error that says to run it again", ce, c)
			}
		default:
			t.Fatalf("tx %s: %v", tx.ID(), err)
		}
	}
	if deposited == 0 || conflicts != 1 {
		t.Fatalf("forced conflict: deposited %d with %d conflicts, want one VALID and one MVCC_READ_CONFLICT", deposited, conflicts)
	}

	// Concurrent deposits to one account conflict; retries get them all in.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := bank.SubmitWithRetry(ctx, 20, "deposit_checking", "bob", "10")
			if err != nil {
				t.Errorf("SubmitWithRetry: %v", err)
				return
			}
			mu.Lock()
			add(c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Submit returns once the transaction is committed on the gateway's
	// own peer; Org2's peer may still be a block behind.
	net.WaitHeight(t, net.Peers[0].Committer.Height(), 10*time.Second)
	a, b := balance(t, ctx, bank, "alice"), balance(t, ctx, bank2, "bob")
	if a != (smallbank.Balance{Checking: 900 + deposited, Savings: 500}) || b != (smallbank.Balance{Checking: 300 + 40}) {
		t.Fatalf("alice %+v, bob %+v", a, b)
	}
	if total := a.Checking + a.Savings + b.Checking + b.Savings; total != 1700+deposited+40 {
		t.Fatalf("Smallbank invariant: total %d, want %d", total, 1700+deposited+40)
	}

	t.Logf("Org1 gateway: %s", net.Peers[0].Gateway.Metrics())

	// Every committed block, in order, from block 0.
	height := net.Peers[0].Committer.Height()
	ectx, ecancel := context.WithCancel(ctx)
	events, errc := connect(t, net.Peers[0].Addr, user).BlockEvents(ectx, 0)
	seen := map[string]api.TxValidationCode{}
	for want := uint64(0); want < height; want++ {
		ev, ok := <-events
		if !ok {
			t.Fatalf("block events ended at block %d of %d: %v", want, height, <-errc)
		}
		if ev.Number != want || len(ev.TxIds) != len(ev.Codes) {
			t.Fatalf("event for block %d (%d tx ids, %d codes), want block %d", ev.Number, len(ev.TxIds), len(ev.Codes), want)
		}
		for i, id := range ev.TxIds {
			seen[id] = api.TxValidationCode(ev.Codes[i])
		}
	}
	for _, id := range txIDs {
		if code, ok := seen[id]; !ok || code != api.TxValidationCode_VALID {
			t.Errorf("tx %s: in events %v with code %s, want VALID", id, ok, code)
		}
	}
	ecancel()
	for range events {
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("block events after cancel: %v, want context.Canceled", err)
	}
}

// TestRefusals checks the errors an application sees.
func TestRefusals(t *testing.T) {
	net := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := connect(t, net.Peers[0].Addr, net.Issue(t, "Org1", "user1", identity.RoleClient))

	var ee *client.EndorseError
	_, err := g.Contract(testnet.Channel, "nosuch").Submit(ctx, "f")
	if !errors.As(err, &ee) || ee.Status != 404 || !strings.Contains(ee.Message, "nosuch") {
		t.Errorf("unknown contract: %v, want an EndorseError with 404 naming it", err)
	}
	_, err = g.Contract("otherch", smallbank.Name).Evaluate(ctx, "query", "x")
	if !errors.As(err, &ee) || ee.Status != 404 {
		t.Errorf("unknown channel: %v, want an EndorseError with 404", err)
	}
	_, err = g.Contract(testnet.Channel, smallbank.Name).Evaluate(ctx, "query", "nobody")
	if !errors.As(err, &ee) || ee.Status < 400 {
		t.Errorf("query of a missing account: %v, want an EndorseError", err)
	}
	// An identity from a CA the channel does not know.
	rogueCA, err := identity.NewCA("Org1", identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	rogue, err := rogueCA.Issue("mallory", identity.RoleClient, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	_, err = connect(t, net.Peers[0].Addr, rogue).Contract(testnet.Channel, smallbank.Name).Submit(ctx, "create_account", "m", "M", "1", "1")
	if !errors.As(err, &ee) || ee.Status != 403 {
		t.Errorf("unknown creator: %v, want an EndorseError with 403", err)
	}

	// Over api.MaxTxBytes: refused before it is sent, naming the limit.
	_, err = g.Contract(testnet.Channel, smallbank.Name).Submit(ctx, "create_account", "big", strings.Repeat("x", api.MaxTxBytes), "1", "1")
	if !errors.Is(err, client.ErrTooLarge) || !strings.Contains(err.Error(), "over the limit of 4194304 (api.MaxTxBytes)") {
		t.Errorf("a proposal over api.MaxTxBytes: %v, want ErrTooLarge naming the limit", err)
	}
	t.Log(err)

	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	var se *client.SubmitError
	if _, err := g.CommitStatus(short, strings.Repeat("ab", 32)); !errors.As(err, &se) || se.Status != 504 {
		t.Errorf("commit status of an unknown tx: %v, want a SubmitError with 504", err)
	}
}
