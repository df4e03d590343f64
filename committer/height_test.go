package committer

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWaitHeight: waiters for a height wake when the committer reaches
// it, not before; one for a height never reached ends with its context.
func TestWaitHeight(t *testing.T) {
	n := newTestNet(t)
	p := openPeer(t, n, t.TempDir(), Options{})
	h := p.Height()
	if err := p.WaitHeight(t.Context(), h); err != nil {
		t.Fatalf("WaitHeight(%d) at height %d: %v", h, h, err)
	}
	const waiters = 8
	woke := make(chan uint64, waiters)
	for range waiters {
		go func() {
			if err := p.WaitHeight(t.Context(), h+2); err != nil {
				t.Error(err)
			}
			woke <- p.Height()
		}()
	}
	deliver(t, p, n.block(n.tx(rwset(testContract, nil, wr("a", "1")))))
	select {
	case got := <-woke:
		t.Fatalf("a waiter for height %d woke at height %d", h+2, got)
	case <-time.After(20 * time.Millisecond):
	}
	deliver(t, p, n.block(n.tx(rwset(testContract, nil, wr("b", "1")))))
	for range waiters {
		select {
		case got := <-woke:
			if got < h+2 {
				t.Fatalf("a waiter woke at height %d, want %d", got, h+2)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("waiters still asleep at height %d", p.Height())
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := p.WaitHeight(ctx, h+100); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitHeight for a height never reached: %v, want the deadline", err)
	}
}
