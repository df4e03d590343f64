package memnode_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/memnode"
)

// TestSlowSubscriber: a Watch subscriber that stops reading never holds
// up the writer. The writer applies until the node reports the
// subscriber fell behind (its gRPC window, the sockets and its
// backlog of 1 MiB full), and on; when the subscriber reads again it finds the
// changes it was sent, then one resync at the newest height in place of
// those it missed; reading again, it is sent every change, each from the
// height before.
func TestSlowSubscriber(t *testing.T) {
	tl, n, w := writer(t, memnode.ServerOptions{WatchBufferBytes: 1 << 20}, -1)
	// Small flow-control windows (no growth): the node's sender blocks
	// soon after the subscriber stops reading.
	conn, err := grpc.NewClient(n.Addr(), grpc.WithTransportCredentials(credentials.NewTLS(tl.Client)),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := api.NewMemoryNodeClient(conn).Watch(ctx, &api.MemWatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := stream.Recv()
	if err != nil || !m.GetResync() || m.GetHeight() != 0 {
		t.Fatalf("first message %v, %v; want a resync at 0", m, err)
	}
	if got := n.Server().Metrics().Watchers; got != 1 {
		t.Fatalf("node counts %d subscribers, want 1", got)
	}
	// Each batch names 64 keys of 1 KiB: the same keys, so that the
	// memory tier stays small while the feed carries 64 KiB a batch.
	var b statedb.Batch
	for i := range 64 {
		b.Put("ns", fmt.Sprintf("%04d%s", i, strings.Repeat("k", 1020)), []byte("v"), statedb.Version{})
	}
	const maxBatches = 5000
	h := uint64(0)
	apply := func() {
		h++
		if err := w.Apply(&b, h, false); err != nil {
			t.Fatalf("Apply %d: %v", h, err)
		}
	}
	for n.Server().Metrics().Overflows == 0 {
		if h == maxBatches {
			t.Fatalf("%d batches (%d MiB of keys) applied and the subscriber, reading nothing, is not behind", h, h/16)
		}
		apply()
	}
	behind := h
	for range 5 {
		apply()
	}
	// Read on: the changes sent before it fell behind, each from the
	// height before, then one resync at the newest height.
	prev, changes := uint64(0), 0
	next := func() *api.MemChange {
		m, err := stream.Recv()
		if err != nil {
			t.Fatalf("after height %d: %v", prev, err)
		}
		if !m.GetResync() && m.GetFrom() != prev {
			t.Fatalf("change from %d to %d after height %d; want each change from the height before", m.GetFrom(), m.GetHeight(), prev)
		}
		prev = m.GetHeight()
		return m
	}
	for !next().GetResync() {
		changes++
	}
	if prev != h || changes >= int(behind) {
		t.Fatalf("resync at %d after %d changes; want it at the newest height %d, after fewer than the %d batches applied before the node found the subscriber behind", prev, changes, h, behind)
	}
	// Caught up, it is sent every change again.
	for range 5 {
		apply()
	}
	for prev < h {
		if m := next(); m.GetResync() {
			t.Fatalf("resync at %d while reading", m.GetHeight())
		}
	}
	if o := n.Server().Metrics().Overflows; o != 1 {
		t.Errorf("node counted %d overflows; want 1", o)
	}
	t.Logf("%d batches of 64 KiB of keys applied before the subscriber was behind; %d changes sent before the resync", behind, changes)
}
