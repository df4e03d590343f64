package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
)

// TestAfter: a client writes through Org1's gateway and reads through
// Org2's, After the commit it saw: the query reads the write. A query
// After a block nobody has committed yet waits for it and is refused as
// behind (503) once Org2's peer has stood still, so the height travels
// and is honoured; a proposal for a transaction is refused the same way.
func TestAfter(t *testing.T) {
	net := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	user := net.Issue(t, "Org1", "user1", identity.RoleClient)
	bank1 := connect(t, net.Peers[0].Addr, user).Contract(testnet.Channel, smallbank.Name)
	bank2 := connect(t, net.Peers[1].Addr, user).Contract(testnet.Channel, smallbank.Name)
	if bank2.After(nil) != bank2 {
		t.Fatal("After(nil) made a new handle")
	}
	c := committed(t)(bank1.Submit(ctx, "create_account", "ann", "Ann", "70", "30"))
	if b := balance(t, ctx, bank2.After(c), "ann"); b.Checking != 70 || b.Savings != 30 {
		t.Fatalf("Ann's balance through Org2's gateway after her account committed in block %d: %+v, want 70 and 30", c.Block, b)
	}
	future := bank2.After(&client.Commit{Block: c.Block + 1000})
	start := time.Now()
	_, err := future.Evaluate(ctx, "query", "ann")
	var ee *client.EndorseError
	if !errors.As(err, &ee) || ee.Status != http.StatusServiceUnavailable || !strings.Contains(ee.Message, "needs state of at least") {
		t.Fatalf("query after block %d, which does not exist: %v; want 503 behind", c.Block+1000, err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("refused after %v: before the peer's state stood still", d)
	}
	if _, err := future.Submit(ctx, "deposit_checking", "ann", "1"); !errors.As(err, &ee) || ee.Status != http.StatusServiceUnavailable {
		t.Fatalf("deposit after block %d, which does not exist: %v; want 503", c.Block+1000, err)
	}
}
