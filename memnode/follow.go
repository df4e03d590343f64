package memnode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/internal/latency"
)

// ErrReader marks a write asked of a reader (ClientOptions.Follow); test
// with errors.Is. Only the peer's committer writes to its memory node.
var ErrReader = errors.New("memnode: a reader does not write")

// notLive is the height a reader's cache is reset to while it does not
// follow the feed: no read answers at it, so Put caches nothing.
const notLive = ^uint64(0)

// Reconnection backoff of the feed, between a stream's loss and the next
// Watch.
const (
	feedRetryMin = 20 * time.Millisecond
	feedRetryMax = time.Second
)

// follower keeps a reader's cache close to the memory node's state by
// following its Watch feed.
//
// The reader's rules, what makes its answers no older than its feed:
//   - floor (Client.applied) is the highest height the node has shown
//     the reader, by the feed or by a read answer. A read answered below
//     it fails with statedb.ErrStateLost: the node lost blocks the reader
//     saw, and it serves them again only once the primary has re-applied
//     them. floor never goes down.
//   - The cache is live when it describes the feed's height: every
//     change processed since a resync at or above floor invalidated its
//     keys in the cache under the client's view lock. A read answered at
//     exactly that height may be cached (tiered.Cache.Put); any other is
//     not. When not live, its height is notLive and it is empty.
//   - The cache is dropped (not live) when the stream ends for any
//     reason (the node gone or restarted, a bad or out-of-order
//     message), when a resync comes (the first of each Watch, or the
//     node's answer to a subscriber that fell behind), and when a read
//     finds the node below floor. It becomes live again at a resync or
//     change at or above floor.
//
// Hence a key's answer is its state at a height no lower than the feed's
// when the read began: a hit is at the cache's height, which is the
// feed's; a remote read is at the node's height, at least floor, at
// least the feed's. Between a batch's publication at the node and its
// invalidation at the reader, a hit may hand out the version the batch
// replaced: the staleness that FeedMetrics measures, and that costs an
// MVCC conflict at validation, never a wrong commit.
type follower struct {
	c      *Client
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns

	// Guarded by c.mu (the client's view lock).
	live  bool
	epoch uint64

	height atomic.Uint64 // the feed's height: the last message processed
	waitMu sync.Mutex
	moved  chan struct{} // closed (and replaced) when height moves

	changes, keys, resyncs, lost, stale, behind, behindMax atomic.Uint64
	lag                                                    latency.Histogram
}

// FeedMetrics is a snapshot of a reader's feed counters: how stale its
// cache may be.
type FeedMetrics struct {
	Height  uint64 `metric:"gauge"`   // the last height the feed processed
	Live    int    `metric:"gauge"`   // 1 while the cache follows the feed, else 0 (no cache hits)
	Changes uint64 `metric:"counter"` // changes processed (one per applied batch)
	Keys    uint64 `metric:"counter"` // keys the changes named
	Resyncs uint64 `metric:"counter"` // resyncs: one per Watch, one per time the reader fell behind on the node
	Lost    uint64 `metric:"counter"` // Watch streams that ended (node gone or restarted, bad message): cache dropped
	// StaleHits counts cache hits that handed out a version a batch
	// already published at the node had replaced: the hit came after
	// the batch's publication (node's clock) and before its
	// invalidation here (measured on this host's clock, so exact only
	// where the two agree).
	StaleHits uint64 `metric:"counter"`
	Behind    uint64 `metric:"gauge"` // heights the last message was behind the node's head when sent
	BehindMax uint64 `metric:"gauge"` // the most heights a message was behind the node's head when sent
	// Lag is the time from a batch's publication at the node to its
	// invalidation here (the two hosts' clocks, as StaleHits).
	Lag latency.Snapshot
}

// startFollow subscribes to the feed and returns once the first
// message (a resync) is processed, or with why it was not within the
// call timeout; the feed then runs until Close.
func (c *Client) startFollow() error {
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{c: c, cancel: cancel, done: make(chan struct{}), moved: make(chan struct{})}
	c.follow = f
	first := make(chan error, 1)
	go f.run(ctx, first)
	timer := time.NewTimer(c.opts.CallTimeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-first:
	case <-timer.C:
		err = fmt.Errorf("no first message within %v", c.opts.CallTimeout)
	}
	if err != nil {
		f.stop()
		return c.callErr("Watch", err)
	}
	return nil
}

// stop ends the feed and waits for it.
func (f *follower) stop() {
	f.cancel()
	<-f.done
}

// run follows the feed until ctx ends, subscribing again after every
// loss. first receives the outcome of the first subscription.
func (f *follower) run(ctx context.Context, first chan<- error) {
	defer close(f.done)
	retry := feedRetryMin
	for {
		got, err := f.watch(ctx, first)
		if got {
			first = nil // watch told it
		}
		f.drop()
		if first != nil {
			first <- err
			return
		}
		if ctx.Err() != nil {
			return
		}
		f.lost.Add(1)
		f.signal()
		if got {
			retry = feedRetryMin
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		retry = min(2*retry, feedRetryMax)
	}
}

// watch runs one Watch call until it ends; got reports whether a
// message came. After its first message it sends nil on first and sets
// it to nil.
func (f *follower) watch(ctx context.Context, first chan<- error) (got bool, err error) {
	stream, err := f.c.rpc.Watch(ctx, &api.MemWatchRequest{})
	if err != nil {
		return false, err
	}
	for {
		m, err := stream.Recv()
		if err != nil {
			return got, err
		}
		ch, err := decodeChange(m)
		if err == nil {
			err = f.process(ch, time.Now().UnixNano())
		}
		if err != nil {
			return got, err
		}
		if !got && first != nil {
			first <- nil
			first = nil
		}
		got = true
	}
}

// process applies one message of the feed to the cache and the fence
// (the rules above type follower), now being this host's clock.
func (f *follower) process(ch change, now int64) error {
	c := f.c
	c.mu.Lock()
	floor := c.applied.Load()
	switch {
	case ch.resync:
		f.resyncs.Add(1)
		f.epoch = ch.epoch
		f.setLiveLocked(ch.height >= floor, ch.height)
		if ch.height < floor {
			c.losses.Add(1)
		}
	case ch.epoch != f.epoch || ch.from != f.height.Load():
		c.mu.Unlock()
		return fmt.Errorf("%w: a change from height %d (epoch %d) while the feed is at %d (epoch %d)",
			ErrBadChange, ch.from, ch.epoch, f.height.Load(), f.epoch)
	default:
		f.changes.Add(1)
		f.keys.Add(uint64(len(ch.keys)))
		if f.live {
			f.stale.Add(uint64(c.cache.Invalidate(ch.height, ch.keySeq, ch.at)))
		} else {
			f.setLiveLocked(ch.height >= floor, ch.height)
		}
		f.lag.Record(time.Duration(max(0, now-ch.at)))
	}
	raise(&c.applied, ch.height)
	c.mu.Unlock()

	behind := ch.head - min(ch.head, ch.height)
	f.behind.Store(behind)
	for m := f.behindMax.Load(); behind > m && !f.behindMax.CompareAndSwap(m, behind); m = f.behindMax.Load() {
	}
	f.waitMu.Lock()
	f.height.Store(ch.height)
	f.signalLocked()
	f.waitMu.Unlock()
	if on := c.opts.OnChange; on != nil {
		ns := ch.namespaces
		if ch.resync {
			ns = nil
		} else if ns == nil {
			ns = []string{} // a batch that wrote nothing
		}
		on(ch.height, ns)
	}
	return nil
}

// signalLocked wakes the waiters on the feed. Called with waitMu held.
func (f *follower) signalLocked() {
	close(f.moved)
	f.moved = make(chan struct{})
}

// signal wakes the waiters on the feed (its state changed).
func (f *follower) signal() {
	f.waitMu.Lock()
	f.signalLocked()
	f.waitMu.Unlock()
}

// setLiveLocked makes the cache live and empty at height, or drops it.
// Called with c.mu held.
func (f *follower) setLiveLocked(live bool, height uint64) {
	f.live = live
	if !live {
		height = notLive
	}
	f.c.cache.Reset(height)
}

// drop empties the cache and stops it answering until the feed makes it
// live again.
func (f *follower) drop() {
	f.c.mu.Lock()
	f.setLiveLocked(false, 0)
	f.c.mu.Unlock()
}

// raise sets a to h if h is higher.
func raise(a *atomic.Uint64, h uint64) {
	for old := a.Load(); h > old && !a.CompareAndSwap(old, h); old = a.Load() {
	}
}

// Synced waits until a reader's feed has processed height h: from then
// on its answers are the state at h or later (the cache, once live,
// describes the feed's height). It fails if ctx ends first, or if the
// client does not follow (ClientOptions.Follow).
func (c *Client) Synced(ctx context.Context, h uint64) error {
	f := c.follow
	if f == nil {
		return fmt.Errorf("memnode %s: Synced on a client without ClientOptions.Follow", c.opts.Address)
	}
	err := f.wait(ctx, func() bool { return f.height.Load() >= h })
	if err != nil {
		return fmt.Errorf("memnode %s: waiting for the feed to reach height %d (at %d): %w", c.opts.Address, h, f.height.Load(), err)
	}
	return nil
}

// wait returns once cond holds, checking it whenever the feed's state
// changes, or ctx's error.
func (f *follower) wait(ctx context.Context, cond func() bool) error {
	for {
		f.waitMu.Lock()
		moved := f.moved
		f.waitMu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-moved:
		}
	}
}

// metrics returns the feed's counters; zero for a writer.
func (f *follower) metrics() FeedMetrics {
	if f == nil {
		return FeedMetrics{}
	}
	f.c.mu.RLock()
	live := 0
	if f.live {
		live = 1
	}
	f.c.mu.RUnlock()
	return FeedMetrics{Height: f.height.Load(), Live: live, Changes: f.changes.Load(), Keys: f.keys.Load(),
		Resyncs: f.resyncs.Load(), Lost: f.lost.Load(), StaleHits: f.stale.Load(),
		Behind: f.behind.Load(), BehindMax: f.behindMax.Load(), Lag: f.lag.Snapshot()}
}
