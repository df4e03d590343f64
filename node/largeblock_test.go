package node_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contracts/kv"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestLargeBlocks: blocks far over gRPC's 4 MiB default message size cross
// every hop — the Raft leader's appends to its followers, orderer to peer,
// peer to client events — and commit on both peers. Before the limits
// were raised (api.MaxBlockMessage), the first such block stopped delivery
// for good: the peer's stream failed on it at every reconnect. A
// transaction over api.MaxTxBytes is refused by name.
func TestLargeBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	n := startNetworkSpec(t, localnet.Spec{Orgs: 2, Orderers: 3,
		Batch: node.BatchConfig{MaxTxs: 8, MaxBytes: 64 << 20, Timeout: time.Minute}}, nil) // cut by count: the 8 inserts form one block
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := n.gateway(t, 0).Contract(n.ch.Channel, kv.Name)
	value := strings.Repeat("v", 1<<20)
	const txs = 8 // about 2 MiB each (the value is in the args and in the writes)
	var wg sync.WaitGroup
	errs := make(chan error, txs)
	for i := range txs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			commit, err := c.Submit(ctx, "insert", fmt.Sprintf("big%d", i), value)
			if err == nil && commit.Code != api.TxValidationCode_VALID {
				err = fmt.Errorf("committed %v", commit.Code)
			}
			if err != nil {
				errs <- fmt.Errorf("insert big%d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n.waitSameHeight(t)
	largest := 0
	for b := uint64(1); b < n.peers[0].Store.Height(); b++ {
		raw, err := n.peers[0].Store.RawBlock(b)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, len(raw))
	}
	if largest <= 4<<20 {
		t.Fatalf("the largest block holds %d bytes: the test needs one over 4 MiB", largest)
	}
	t.Logf("largest block: %.1f MiB", float64(largest)/(1<<20))

	_, err := c.Submit(ctx, "insert", "huge", strings.Repeat("h", api.MaxTxBytes))
	if err == nil || !strings.Contains(err.Error(), "over the limit") && !strings.Contains(err.Error(), "larger than max") {
		t.Errorf("a transaction over api.MaxTxBytes: %v, want a refusal naming the limit", err)
	}
}
