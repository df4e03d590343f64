package orderer

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/strand-ledger/strand/orderer/cut"
)

var oneTx = cut.Config{MaxTxs: 1, Timeout: time.Hour}

// waitHeight polls until the orderer holds h blocks (10 s at most).
func waitHeight(t *testing.T, o *Orderer, h uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); o.Height() < h; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("height %d after 10s, want %d", o.Height(), h)
		}
	}
}

func deliverAll(t *testing.T, o *Orderer, start uint64) [][]byte {
	t.Helper()
	var out [][]byte
	err := o.Deliver(context.Background(), start, false, func(raw []byte) error {
		out = append(out, raw)
		return nil
	})
	if err != nil {
		t.Fatalf("Deliver from %d: %v", start, err)
	}
	return out
}

func TestDeliverStoredBlocks(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, oneTx)
	submitAll(t, n, o, keys("d", 5)...)
	waitHeight(t, o, 5)
	all := deliverAll(t, o, 0)
	if len(all) != 5 {
		t.Fatalf("Deliver from 0 without follow sent %d blocks, want 5", len(all))
	}
	mid := deliverAll(t, o, 3)
	if len(mid) != 2 || !bytes.Equal(mid[0], all[3]) || !bytes.Equal(mid[1], all[4]) {
		t.Errorf("Deliver from 3 sent %d blocks, want blocks 3 and 4", len(mid))
	}
	if beyond := deliverAll(t, o, 9); len(beyond) != 0 {
		t.Errorf("Deliver from 9 without follow sent %d blocks, want none", len(beyond))
	}
	raw, err := o.cfg.Store.RawBlock(2)
	if err != nil || !bytes.Equal(raw, all[2]) {
		t.Errorf("delivered block 2 differs from the stored one (%v)", err)
	}
}

func TestDeliverFollowAndBeyondHeight(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, oneTx)
	submitAll(t, n, o, "a")
	type result struct {
		start uint64
		blks  int
	}
	results := make(chan result, 2)
	for _, start := range []uint64{0, 3} { // from the start, and beyond the height
		go func() {
			b := blocks(t, o, start, int(5-start))
			checkChain(t, n.reg, b[0].Header.PreviousHash, b)
			results <- result{start, len(b)}
		}()
	}
	submitAll(t, n, o, keys("f", 4)...)
	for range 2 {
		r := <-results
		if r.blks != int(5-r.start) {
			t.Errorf("follower from %d got %d blocks", r.start, r.blks)
		}
	}
}

func TestConcurrentDeliverers(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, cut.Config{MaxTxs: 2, Timeout: 20 * time.Millisecond})
	const followers, want = 8, 10
	got := make([][][]byte, followers)
	var wg sync.WaitGroup
	for i := range followers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			o.Deliver(ctx, 0, true, func(raw []byte) error {
				got[i] = append(got[i], raw)
				if len(got[i]) == want {
					cancel()
				}
				return nil
			})
		})
	}
	submitAll(t, n, o, keys("c", 2*want)...)
	wg.Wait()
	for i := range followers {
		if len(got[i]) != want {
			t.Fatalf("follower %d got %d blocks, want %d", i, len(got[i]), want)
		}
		for j := range want {
			if !bytes.Equal(got[i][j], got[0][j]) {
				t.Fatalf("follower %d block %d differs from follower 0's", i, j)
			}
		}
	}
}

func TestDeliverEnds(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, oneTx)
	submitAll(t, n, o, "a")
	waitHeight(t, o, 1)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Deliver(ctx, 0, true, func([]byte) error { return nil }) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Deliver after cancel: %v, want context.Canceled", err)
	}

	sendErr := errors.New("peer went away")
	if err := o.Deliver(context.Background(), 0, true, func([]byte) error { return sendErr }); !errors.Is(err, sendErr) {
		t.Errorf("Deliver with a failing send: %v, want the send error", err)
	}

	count := 0
	go func() {
		done <- o.Deliver(context.Background(), 0, true, func([]byte) error { count++; return nil })
	}()
	submitAll(t, n, o, "b")
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) || count != 2 {
		t.Errorf("follower at Close: %v after %d blocks, want ErrClosed after 2", err, count)
	}
}
