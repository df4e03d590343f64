package memnode_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode"
	"github.com/strand-ledger/strand/memnode/memnodetest"
)

// follow starts a memory node with the given options and connects its
// writer and a reader with a 1 MiB cache.
func follow(t testing.TB, opts memnode.ServerOptions) (n *memnodetest.Node, w, r *memnode.Client) {
	t.Helper()
	_, n, w = writer(t, opts, 0)
	var err error
	if r, err = n.DialReader(1 << 20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return n, w, r
}

// writer starts a memory node with opts and dials its writer with a
// cache of cacheBytes (0: the default, -1: none); both close when the
// test ends.
func writer(t testing.TB, opts memnode.ServerOptions, cacheBytes int64) (tl *memnodetest.TLS, n *memnodetest.Node, w *memnode.Client) {
	t.Helper()
	tl, err := memnodetest.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	if n, err = memnodetest.StartOptions(tl, t.TempDir(), opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	if w, err = n.Dial(cacheBytes); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return tl, n, w
}

// put applies one batch of puts (key, value pairs) at height.
func put(t testing.TB, w *memnode.Client, height uint64, kv ...string) {
	t.Helper()
	var b statedb.Batch
	for i := 0; i < len(kv); i += 2 {
		b.Put("ns", kv[i], []byte(kv[i+1]), statedb.Version{Block: height})
	}
	if err := w.Apply(&b, height, false); err != nil {
		t.Fatalf("Apply %d: %v", height, err)
	}
}

// synced waits (without a deadline of its own: the test's) for r's feed
// to reach h.
func synced(t testing.TB, r *memnode.Client, h uint64) {
	t.Helper()
	if err := r.Synced(context.Background(), h); err != nil {
		t.Fatal(err)
	}
}

// get reads key through r and checks its value.
func get(t *testing.T, r *memnode.Client, key, want string) {
	t.Helper()
	v, found, err := r.Get("ns", key)
	if err != nil || !found || string(v.Data) != want {
		t.Fatalf("reader: %s = %q found %v err %v; want %q", key, v.Data, found, err, want)
	}
}

// TestFollowInvalidation: a reader caches what it reads at its feed's
// height; the feed invalidates exactly the keys a batch wrote, so the
// reader sees the new version once the change is in, and keeps its
// other entries.
func TestFollowInvalidation(t *testing.T) {
	_, w, r := follow(t, memnode.ServerOptions{})
	put(t, w, 1, "k", "v1", "j", "j1")
	synced(t, r, 1)
	get(t, r, "k", "v1")
	get(t, r, "j", "j1")
	before := r.Metrics()
	get(t, r, "k", "v1")
	get(t, r, "j", "j1")
	if m := r.Metrics(); m.CacheHits != before.CacheHits+2 || m.RemoteReads != before.RemoteReads {
		t.Fatalf("second reads: %d hits, %d remote (before %d, %d); want both from the cache", m.CacheHits, m.RemoteReads, before.CacheHits, before.RemoteReads)
	}
	put(t, w, 3, "k", "v3") // a group of blocks: 1 → 3
	synced(t, r, 3)
	before = r.Metrics()
	get(t, r, "k", "v3")
	get(t, r, "j", "j1")
	m := r.Metrics()
	if m.RemoteReads != before.RemoteReads+1 || m.CacheHits != before.CacheHits+1 {
		t.Errorf("after the change to k: %d remote, %d hits (before %d, %d); want k remote, j cached", m.RemoteReads, m.CacheHits, before.RemoteReads, before.CacheHits)
	}
	if m.Feed.Changes != 2 || m.Feed.Keys != 3 || m.Feed.Resyncs != 1 || m.Feed.Live != 1 || m.Feed.Height != 3 || m.Feed.Lag.Count != 2 {
		t.Errorf("feed metrics %+v; want 2 changes naming 3 keys, 1 resync, live at height 3, 2 lags", m.Feed)
	}
	if err := r.Apply(&statedb.Batch{}, 4, false); !errors.Is(err, memnode.ErrReader) {
		t.Errorf("a reader's Apply: %v; want ErrReader", err)
	}
	if sp, err := r.Savepoint(); err != nil || sp != 3 {
		t.Errorf("reader's Savepoint = %d, %v; want the node's 3", sp, err)
	}
}

// TestFollowNeverOlder runs a writer and readers together: every answer
// a reader gives for a key is no older than the key's last write at or
// below the feed height the reader had processed when it asked; once
// the writer stops and the feed catches up, every answer is the last
// write.
func TestFollowNeverOlder(t *testing.T) {
	_, w, r := follow(t, memnode.ServerOptions{})
	const keys, batches, readers = 16, 300, 4
	var mu sync.Mutex
	written := make(map[string][]uint64) // key → heights written, ascending
	lastAtOrBelow := func(key string, h uint64) uint64 {
		mu.Lock()
		defer mu.Unlock()
		var last uint64
		for _, wh := range written[key] {
			if wh <= h {
				last = wh
			}
		}
		return last
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for g := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for {
				select {
				case <-done:
					return
				default:
				}
				key := fmt.Sprint("k", rng.IntN(keys))
				fed := r.Metrics().Feed.Height
				v, found, err := r.Get("ns", key)
				if err != nil {
					errs <- err
					return
				}
				if want := lastAtOrBelow(key, fed); want > 0 && (!found || v.Version.Block < want) {
					errs <- fmt.Errorf("%s read after the feed reached %d: version %v (found %v); want at least block %d", key, fed, v.Version, found, want)
					return
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for h := uint64(1); h <= batches; h++ {
		kv := make([]string, 0, 8)
		mu.Lock()
		for range 4 {
			k := fmt.Sprint("k", rng.IntN(keys))
			kv = append(kv, k, fmt.Sprint("v", h))
			if ws := written[k]; len(ws) == 0 || ws[len(ws)-1] != h {
				written[k] = append(ws, h)
			}
		}
		mu.Unlock()
		put(t, w, h, kv...)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	synced(t, r, batches)
	for k := range keys {
		key := fmt.Sprint("k", k)
		if last := lastAtOrBelow(key, batches); last > 0 {
			get(t, r, key, fmt.Sprint("v", last))
		}
	}
	t.Logf("reader: %+v", r.Metrics().Feed)
}

// TestFollowResync: a batch whose keys do not fit a subscriber's buffer
// on the node is never queued: the subscriber is sent a resync, and a
// reader then drops its whole cache.
func TestFollowResync(t *testing.T) {
	n, w, r := follow(t, memnode.ServerOptions{WatchBufferBytes: 4 << 10})
	put(t, w, 1, "k", "v1")
	synced(t, r, 1)
	get(t, r, "k", "v1") // cached
	var big []string
	for i := range 100 {
		big = append(big, fmt.Sprintf("big%03d-%080d", i, 0), "x") // ~9 KiB of keys
	}
	put(t, w, 2, big...)
	synced(t, r, 2)
	if o := n.Server().Metrics().Overflows; o != 1 {
		t.Fatalf("node counted %d subscribers behind; want 1", o)
	}
	before := r.Metrics()
	get(t, r, "k", "v1")
	m := r.Metrics()
	if m.Feed.Resyncs != 2 || m.Feed.Changes != 1 || m.RemoteReads != before.RemoteReads+1 {
		t.Errorf("after the resync: %d resyncs, %d changes, %d remote reads (before %d); want 2, 1 and k read from the node", m.Feed.Resyncs, m.Feed.Changes, m.RemoteReads, before.RemoteReads)
	}
}

// TestFollowKillRestart kills the memory node under a reader: the reader
// drops its cache when the feed breaks, refuses the restarted node's
// older state (ErrStateLost) while the writer re-applies, and follows
// again, cache live, once the node is back at the height it had shown.
func TestFollowKillRestart(t *testing.T) {
	n, w, r := follow(t, memnode.ServerOptions{Tiers: tiered.Options{FlushBlocks: 6, FlushInterval: time.Hour}})
	for h := uint64(1); h <= 10; h++ {
		put(t, w, h, fmt.Sprint("k", h%3), fmt.Sprint("v", h))
		// A flush writes every batch applied by the time it runs: wait
		// for block 6's before applying 7, so that the savepoint the
		// restarted node comes back at is 6, with 7 to 10 lost (a late
		// flush would take more).
		for deadline := time.Now().Add(30 * time.Second); h == 6 && n.Server().Metrics().Tiers.Durable < 6; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("storage savepoint %d 30 s after block 6: want 6 (FlushBlocks)", n.Server().Metrics().Tiers.Durable)
			}
		}
	}
	synced(t, r, 10)
	get(t, r, "k0", "v9")
	get(t, r, "k1", "v10")
	if r.Metrics().CacheBytes == 0 {
		t.Fatal("nothing cached before the kill")
	}
	durable := n.Server().Metrics().Tiers.Durable
	if durable != 6 {
		t.Fatalf("storage savepoint %d after 10 blocks flushed every 6: want 6", durable)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := memnode.WaitFeed(ctx, r, func(m memnode.FeedMetrics) bool { return m.Lost >= 1 }); err != nil {
		t.Fatal(err)
	}
	if m := r.Metrics(); m.CacheBytes != 0 || m.Feed.Live != 0 {
		t.Fatalf("after the feed broke: cache %d bytes, live %d; want dropped", m.CacheBytes, m.Feed.Live)
	}
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	// The feed comes back with a resync at the storage savepoint.
	if err := memnode.WaitFeed(ctx, r, func(m memnode.FeedMetrics) bool { return m.Resyncs >= 2 }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Get("ns", "k0"); !errors.Is(err, statedb.ErrStateLost) {
		t.Fatalf("reader's Get from the restarted node at %d: %v; want ErrStateLost", durable, err)
	}
	if _, err := r.Savepoint(); !errors.Is(err, statedb.ErrStateLost) {
		t.Fatalf("reader's Savepoint from the restarted node: %v; want ErrStateLost", err)
	}
	if m := r.Metrics(); m.Feed.Live != 0 || m.Feed.Height != durable {
		t.Fatalf("feed after the restart: live %d at height %d; want not live at %d", m.Feed.Live, m.Feed.Height, durable)
	}
	// The writer meets the loss and re-applies (as the committer does).
	if err := w.Apply(&statedb.Batch{}, 11, false); !errors.Is(err, statedb.ErrStateLost) {
		t.Fatalf("writer's Apply after the restart: %v; want ErrStateLost", err)
	}
	sp, err := w.Savepoint()
	if err != nil || sp != durable {
		t.Fatalf("writer's Savepoint = %d, %v; want %d", sp, err, durable)
	}
	for h := sp + 1; h <= 10; h++ {
		put(t, w, h, fmt.Sprint("k", h%3), fmt.Sprint("v", h))
	}
	synced(t, r, 10)
	before := r.Metrics()
	get(t, r, "k0", "v9")
	get(t, r, "k1", "v10")
	get(t, r, "k0", "v9")
	m := r.Metrics()
	if m.Feed.Live != 1 || m.RemoteReads != before.RemoteReads+2 || m.CacheHits != before.CacheHits+1 {
		t.Errorf("after the re-apply: live %d, %d remote reads, %d hits (before %d, %d); want live, 2 remote, then 1 hit",
			m.Feed.Live, m.RemoteReads, m.CacheHits, before.RemoteReads, before.CacheHits)
	}
}

// BenchmarkFollowStaleness measures how stale a reader's cache runs
// while the writer applies as fast as it can: per op one batch of 8
// writes to keys drawn uniformly from 1000, while 2 goroutines read the
// same keys through the reader (GetMany of 4). It reports the feed's lag
// (a batch's publication at the node to its invalidation at the reader:
// mean, and p50 and p99 as bucket bounds, within a factor of two), the
// most heights a feed message was behind the node, the cache hits that
// handed out a replaced version per 1000 hits, and the hit ratio.
func BenchmarkFollowStaleness(b *testing.B) {
	_, w, r := follow(b, memnode.ServerOptions{})
	const keys = 1000
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			ks := make([]statedb.Key, 4)
			out := make([]statedb.Result, len(ks))
			for {
				select {
				case <-done:
					return
				default:
				}
				for j := range ks {
					ks[j] = statedb.Key{Namespace: "ns", Key: fmt.Sprint("k", rng.IntN(keys))}
				}
				if err := r.GetMany(ks, out); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(1, 1))
	kv := make([]string, 16)
	b.ResetTimer()
	for h := uint64(1); h <= uint64(b.N); h++ {
		for j := 0; j < len(kv); j += 2 {
			kv[j], kv[j+1] = fmt.Sprint("k", rng.IntN(keys)), fmt.Sprint("v", h)
		}
		put(b, w, h, kv...)
	}
	b.StopTimer()
	close(done)
	wg.Wait()
	synced(b, r, uint64(b.N))
	m := r.Metrics()
	lag := m.Feed.Lag
	b.ReportMetric(float64(lag.Mean().Microseconds()), "lag-mean-µs")
	b.ReportMetric(float64(lag.Quantile(0.5).Microseconds()), "lag-p50≤µs")
	b.ReportMetric(float64(lag.Quantile(0.99).Microseconds()), "lag-p99≤µs")
	b.ReportMetric(float64(m.Feed.BehindMax), "behind-max-heights")
	if m.CacheHits > 0 {
		b.ReportMetric(1000*float64(m.Feed.StaleHits)/float64(m.CacheHits), "stale/1k-hits")
	}
	if reads := m.CacheHits + m.RemoteReads; reads > 0 {
		b.ReportMetric(100*float64(m.CacheHits)/float64(reads), "hit-%")
	}
}

// TestFollowOnChange: a reader's OnChange hears of the first resync (nil
// namespaces) and then, per applied batch, its height and the
// namespaces it wrote, each group once, in the batch's order; a batch
// that wrote nothing names none.
func TestFollowOnChange(t *testing.T) {
	tl, n, w := writer(t, memnode.ServerOptions{}, 0)
	type heard struct {
		height uint64
		ns     []string
	}
	got := make(chan heard, 16)
	r, err := memnode.Dial(memnode.ClientOptions{Address: n.Addr(), TLS: tl.Client, Follow: true,
		OnChange: func(h uint64, ns []string) { got <- heard{h, ns} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	var b statedb.Batch
	b.Put("_lifecycle", "def/x", []byte("d"), statedb.Version{Block: 1})
	b.Put("ns", "k", []byte("v"), statedb.Version{Block: 1})
	b.Put("_lifecycle", "code/h", []byte("c"), statedb.Version{Block: 1})
	if err := w.Apply(&b, 1, false); err != nil {
		t.Fatal(err)
	}
	if err := w.Apply(&statedb.Batch{}, 2, false); err != nil {
		t.Fatal(err)
	}
	synced(t, r, 2)
	want := []string{"0 <nil>", "1 [_lifecycle ns]", "2 []"}
	for i, w := range want {
		h := <-got
		s := fmt.Sprintf("%d %v", h.height, h.ns)
		if h.ns == nil {
			s = fmt.Sprintf("%d <nil>", h.height)
		}
		if s != w {
			t.Fatalf("message %d: OnChange heard %q; want %q", i, s, w)
		}
	}
}
