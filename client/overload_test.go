package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/orderer/cut"
)

// TestOverloaded: a gateway that takes one transaction at a time answers
// the others 429 with a hint; Submit reports it, SubmitWithRetry waits
// and gets through.
func TestOverloaded(t *testing.T) {
	net := testnet.Start(t, testnet.Options{MaxInFlight: 1,
		Batch: cut.Config{MaxTxs: 100, Timeout: 200 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bank := connect(t, net.Peers[0].Addr, net.Issue(t, "Org1", "user1", identity.RoleClient)).Contract(testnet.Channel, smallbank.Name)

	// The first transaction is in flight for up to 200 ms: the second,
	// submitted meanwhile, is refused.
	first, err := bank.Endorse(ctx, "create_account", "a", "A", "1", "1")
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Submit(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = bank.Submit(ctx, "create_account", "b", "B", "1", "1")
	var ee *client.EndorseError
	if !errors.As(err, &ee) || ee.Status != 429 || ee.RetryAfter <= 0 {
		t.Fatalf("Submit while the gateway is full: %v, want an EndorseError with 429 and a retry hint", err)
	}
	if _, err := first.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("c", i)
			if _, err := bank.SubmitWithRetry(ctx, 100, "create_account", id, id, "1", "1"); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("SubmitWithRetry through a full gateway: %v", err)
	}
	if m := net.Peers[0].Gateway.Metrics(); m.Overloaded < 2 {
		t.Errorf("metrics %s: want at least 2 overloaded answers", m)
	}
}
