package memnode_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode/memnodetest"
)

// TestKillAndRestart kills a memory node holding blocks above its storage
// savepoint and checks what its client reports: unavailable (naming the
// node) while it is down, then a lost state on reads and Apply, then its
// storage savepoint from Savepoint; re-applying the lost blocks brings
// back the same state, and a re-sent batch is acknowledged without a
// second write.
func TestKillAndRestart(t *testing.T) {
	tl, err := memnodetest.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	// Flush every 6 blocks, never by time: once block 6 is written to
	// storage, blocks 7 to 10 stay only in the memory tier. (A flush
	// writes every batch applied by the time it runs, so the test waits
	// for block 6's before applying 7: with Apply racing ahead, a late
	// flush took storage to 10 in a CI run.)
	n, err := memnodetest.Start(tl, t.TempDir(), tiered.Options{FlushBlocks: 6, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Close() }()
	c, err := n.Dial(0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	batches := make([]statedb.Batch, 11)
	for h := uint64(1); h <= 10; h++ {
		batches[h].Put("ns", fmt.Sprint("k", h%3), []byte(fmt.Sprint("v", h)), statedb.Version{Block: h - 1})
		if err := c.Apply(&batches[h], h, false); err != nil {
			t.Fatalf("Apply %d: %v", h, err)
		}
		for deadline := time.Now().Add(30 * time.Second); h == 6 && n.Server().Metrics().Tiers.Durable < 6; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("storage savepoint %d 30 s after block 6: want 6 (FlushBlocks)", n.Server().Metrics().Tiers.Durable)
			}
		}
	}
	c2, err := n.Dial(0) // at height 10 too; it will meet the loss on Apply
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	durable := n.Server().Metrics().Tiers.Durable
	if durable != 6 {
		t.Fatalf("storage savepoint %d: want 6, with blocks 7 to 10 above it for the kill to lose", durable)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get("ns", "not-cached"); !errors.Is(err, statedb.ErrUnavailable) || !strings.Contains(err.Error(), n.Addr()) {
		t.Fatalf("Get from a killed node: %v; want ErrUnavailable naming %s", err, n.Addr())
	}
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	// The cache holds what Apply wrote; a key it does not hold goes to
	// the node.
	_, _, err = c.Get("ns", "never-written")
	for deadline := time.Now().Add(30 * time.Second); errors.Is(err, statedb.ErrUnavailable) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // the client reconnects
		_, _, err = c.Get("ns", "never-written")
	}
	if !errors.Is(err, statedb.ErrStateLost) {
		t.Fatalf("Get from a restarted node: %v; want ErrStateLost", err)
	}
	if err := c.Apply(&statedb.Batch{}, 11, false); !errors.Is(err, statedb.ErrStateLost) {
		t.Fatalf("Apply after a read met the loss: %v; want ErrStateLost", err)
	}
	if err := c2.Apply(&statedb.Batch{}, 11, false); !errors.Is(err, statedb.ErrStateLost) {
		t.Fatalf("Apply from 10 to a node at %d: %v; want ErrStateLost", durable, err)
	}
	sp, err := c.Savepoint()
	if err != nil || sp != durable {
		t.Fatalf("Savepoint after the loss = %d, %v; want the storage savepoint %d", sp, err, durable)
	}
	for h := sp + 1; h <= 10; h++ {
		if err := c.Apply(&batches[h], h, false); err != nil {
			t.Fatalf("re-applying %d: %v", h, err)
		}
	}
	fresh, err := n.Dial(-1) // no cache: every read from the node
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for k, want := range map[string]string{"k0": "v9", "k1": "v10", "k2": "v8"} {
		v, found, err := fresh.Get("ns", k)
		if err != nil || !found || string(v.Data) != want {
			t.Errorf("after re-applying, %s = %q found %v err %v; want %q", k, v.Data, found, err, want)
		}
	}
	m := n.Server().Metrics()
	if m.Refused != 1 || m.Applies != 10-durable {
		t.Errorf("restarted server counted %d applies, %d refused; want %d and 1", m.Applies, m.Refused, 10-durable)
	}
}
