package memnode_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode"
	"github.com/strand-ledger/strand/memnode/memnodetest"
)

// rawClient is a gRPC client of the node with the given TLS side.
func rawClient(t *testing.T, addr string, tc *tls.Config) api.MemoryNodeClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return api.NewMemoryNodeClient(conn)
}

// TestClientLimits: a client's running calls and Watch streams are
// bounded per client certificate name; one over its limit is refused at
// once with ResourceExhausted naming the limit, other clients and the
// writer's Apply are served, and a call that ended frees its place.
func TestClientLimits(t *testing.T) {
	tl, err := memnodetest.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	n, err := memnodetest.StartOptions(tl, t.TempDir(), memnode.ServerOptions{
		Limits: memnode.Limits{MaxCallsPerClient: 2, MaxWatchesPerClient: 1, MaxWatches: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Close() }()
	w, err := n.Dial(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var b statedb.Batch
	for i := range 20 {
		b.Put("ns", fmt.Sprintf("k%02d", i), []byte("v"), statedb.Version{})
	}
	if err := w.Apply(&b, 1, false); err != nil {
		t.Fatal(err)
	}
	peer0 := rawClient(t, n.Addr(), tl.Client) // the writer's name
	computeTLS, err := tl.ClientAs("compute1")
	if err != nil {
		t.Fatal(err)
	}
	compute1 := rawClient(t, n.Addr(), computeTLS)
	ctx := context.Background()

	// Two scans held open (a full first page: the node waits for the
	// next request) are peer0's two calls.
	var scans []api.MemoryNode_ScanClient
	for range 2 {
		sc, err := peer0.Scan(ctx)
		if err == nil {
			err = sc.Send(&api.MemScanRequest{Namespace: []byte("ns")})
		}
		if err == nil {
			_, err = sc.Recv()
		}
		if err != nil {
			t.Fatal(err)
		}
		scans = append(scans, sc)
	}
	getOne := &api.MemGetRequest{Keys: []*api.MemKey{{Namespace: []byte("ns"), Key: []byte("k00")}}}
	_, err = peer0.GetMany(ctx, getOne)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "maxCallsPerClient") || !strings.Contains(err.Error(), `"peer0"`) {
		t.Fatalf("a third call from peer0: %v; want ResourceExhausted naming maxCallsPerClient and peer0", err)
	}
	if _, err := compute1.GetMany(ctx, getOne); err != nil {
		t.Fatalf("compute1's call while peer0 is at its limit: %v", err)
	}
	if err := w.Apply(&statedb.Batch{}, 2, false); err != nil {
		t.Fatalf("the writer's Apply while its name is at its call limit: %v", err)
	}
	// Finish one scan: once it has ended, peer0 may call again.
	if err := scans[0].Send(&api.MemScanRequest{}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := scans[0].Recv(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := peer0.GetMany(ctx, getOne); err != nil {
		t.Fatalf("peer0's call after a scan ended: %v", err)
	}

	// Watch streams: one per client, two in all.
	watch := func(c api.MemoryNodeClient) error {
		st, err := c.Watch(ctx, &api.MemWatchRequest{})
		if err == nil {
			_, err = st.Recv()
		}
		return err
	}
	if err := watch(peer0); err != nil {
		t.Fatal(err)
	}
	if err := watch(peer0); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "maxWatchesPerClient") {
		t.Fatalf("peer0's second Watch: %v; want ResourceExhausted naming maxWatchesPerClient", err)
	}
	if _, err := n.DialReader(-1); !errors.Is(err, statedb.ErrUnavailable) || !strings.Contains(err.Error(), "maxWatchesPerClient") {
		t.Fatalf("a reader dialled as peer0 with its Watch taken: %v; want ErrUnavailable (retryable) naming maxWatchesPerClient", err)
	}
	if err := watch(compute1); err != nil {
		t.Fatal(err)
	}
	compute2TLS, err := tl.ClientAs("compute2")
	if err != nil {
		t.Fatal(err)
	}
	if err := watch(rawClient(t, n.Addr(), compute2TLS)); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "maxWatches)") {
		t.Fatalf("a third Watch on the node: %v; want ResourceExhausted naming maxWatches", err)
	}
	if m := n.Server().Metrics(); m.OverLimit != 4 || m.Watchers != 2 {
		t.Errorf("node counted %d calls over a limit and %d subscribers; want 4 and 2", m.OverLimit, m.Watchers)
	}
}

// TestMessageLimit: a message above the node's bound is refused with
// ResourceExhausted, and the client's error names the bounds to change.
func TestMessageLimit(t *testing.T) {
	_, _, w := writer(t, memnode.ServerOptions{MaxMessageBytes: 1 << 20}, -1)
	var b statedb.Batch
	b.Put("ns", "big", make([]byte, 2<<20), statedb.Version{})
	err := w.Apply(&b, 1, false)
	if err == nil || !strings.Contains(err.Error(), "ResourceExhausted") || !strings.Contains(err.Error(), "maxMessageMB") {
		t.Fatalf("Apply of a 2 MiB batch to a node bounded at 1 MiB: %v; want ResourceExhausted naming maxMessageMB", err)
	}
	if sp, err := w.Savepoint(); err != nil || sp != 0 {
		t.Fatalf("after the refused batch: savepoint %d, %v; want 0", sp, err)
	}
}

// TestMemoryBoundUnderLoad: with a writer filling a 256 KiB memory tier
// many times over while readers (plain and following) read all the
// time, the tier never holds more than its bound after an Apply: Apply
// waits for the flusher to make room, however busy the readers keep it.
func TestMemoryBoundUnderLoad(t *testing.T) {
	tl, err := memnodetest.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	n, err := memnodetest.StartOptions(tl, t.TempDir(), memnode.ServerOptions{Tiers: tiered.Options{MemoryBytes: 256 << 10, FlushBlocks: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Close() }()
	w, err := n.Dial(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const keys, batches = 2000, 150
	key := func(i int) string { return fmt.Sprintf("k%05d", i%keys) }
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		var c *memnode.Client
		if g%2 == 0 {
			c, err = n.Dial(-1)
		} else {
			c, err = n.DialReader(64 << 10)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ks := make([]statedb.Key, 32)
			out := make([]statedb.Result, len(ks))
			for i := g; ; i += 32 {
				select {
				case <-done:
					return
				default:
				}
				for j := range ks {
					ks[j] = statedb.Key{Namespace: "ns", Key: key(i*7 + j)}
				}
				if err := c.GetMany(ks, out); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	value := make([]byte, 1000)
	for h := 1; h <= batches; h++ {
		var b statedb.Batch
		for j := range 32 {
			b.Put("ns", key(h*32+j), value, statedb.Version{Block: uint64(h)})
		}
		if err := w.Apply(&b, uint64(h), false); err != nil {
			t.Fatal(err)
		}
		if m := n.Server().Metrics().Tiers; m.MemoryBytes > m.MemoryBound {
			t.Fatalf("after Apply %d the memory tier holds %d bytes, bound %d", h, m.MemoryBytes, m.MemoryBound)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m := n.Server().Metrics().Tiers
	if m.Evicted == 0 {
		t.Errorf("%d batches of 32 KiB through a 256 KiB tier evicted nothing: %+v", batches, m)
	}
	t.Logf("tiers: %+v", m)
}
