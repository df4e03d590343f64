package orderer

import (
	"slices"
	"testing"
	"time"
)

// stream is a stream-mode config whose timeout would never cut a block
// within a test: every block below is cut by Free or by MaxTxs.
var stream = BatchConfig{Mode: ModeStream, MaxTxs: 100, Timeout: time.Hour}

// TestStreamLightLoad: one transaction at a time, each gets a block of its
// own at once (the hour-long timeout never fires).
func TestStreamLightLoad(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, stream)
	var prev []byte
	for i, k := range keys("s", 5) {
		ids := submitAll(t, n, o, k)
		b := blocks(t, o, uint64(i), 1)
		prev = checkChain(t, n.reg, prev, b)
		if got := txIDs(t, b); !slices.Equal(got, ids) {
			t.Fatalf("block %d holds txs %v, want just %v", i, got, ids)
		}
	}
}

// TestStreamBurstWhileSealBusy: while seal is held on the first block, a
// burst accumulates in the cutter; full batches (MaxTxs) go as they fill,
// and the rest goes as one block the moment seal is free again.
func TestStreamBurstWhileSealBusy(t *testing.T) {
	n := newTestNet(t)
	store := openStore(t, t.TempDir())
	o, err := newOrderer(n.config(store, stream))
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	calls := 0
	o.sealHook = func() { // seal's goroutine only
		if calls++; calls == 1 {
			close(entered)
			<-release
		}
	}
	o.start()
	t.Cleanup(func() {
		if err := o.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		store.Close()
	})

	ids := submitAll(t, n, o, "first")
	<-entered // seal holds block 0 and is busy
	ids = append(ids, submitAll(t, n, o, keys("burst", 250)...)...)
	// Once the queue is empty the loop has taken (and added) every burst
	// transaction, so none can reach the cutter after seal's wake-up.
	for deadline := time.Now().Add(10 * time.Second); len(o.in) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the loop left %d transactions in the queue", len(o.in))
		}
	}
	close(release)

	blks := blocks(t, o, 0, 4)
	checkChain(t, n.reg, nil, blks)
	var sizes []int
	for _, b := range blks {
		sizes = append(sizes, len(b.Transactions))
	}
	if want := []int{1, 100, 100, 50}; !slices.Equal(sizes, want) {
		t.Errorf("block sizes %v, want %v (one alone, two full while seal was busy, the rest when it was free)", sizes, want)
	}
	if got := txIDs(t, blks); !slices.Equal(got, ids) {
		t.Errorf("tx ids out of order: got %d ids, want %d in submission order", len(got), len(ids))
	}
	if h := o.Height(); h != 4 {
		t.Errorf("Height %d, want 4", h)
	}
}
