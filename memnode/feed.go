package memnode

import (
	"sync"
	"sync/atomic"

	"github.com/strand-ledger/strand/api"
)

// backlog is what one Watch subscriber has yet to be sent: the changes
// published since its sender last took them, at most max bytes of them,
// or, once they would have exceeded that, a resync at the newest
// published height in their place. It is the decision core of the feed:
// no I/O, no clock, no lock (the hub holds its own around it).
//
// Invariant: the messages take returns, in order, after those it
// returned before, describe every published batch: either each change
// from the subscriber's height on, or a resync at a height from which
// the changes after it follow. A push never waits: a subscriber too slow
// to keep up costs itself its cache, never the writer its time.
type backlog struct {
	max     int
	changes []*api.MemChange
	bytes   int
	resync  bool   // the next message is a resync at height
	height  uint64 // the newest published height
	at      int64  // when height was published
}

// push adds the change of a batch, costing size bytes. It reports
// whether the backlog overflowed with it (and became a resync).
func (b *backlog) push(c *api.MemChange, size int) (overflowed bool) {
	b.height, b.at = c.GetHeight(), c.GetAppliedUnixNano()
	if b.resync {
		return false
	}
	if b.bytes+size > b.max {
		b.changes, b.bytes, b.resync = nil, 0, true
		return true
	}
	b.changes = append(b.changes, c)
	b.bytes += size
	return false
}

// lose records a batch whose keys are unknown: the subscriber resyncs
// at its height.
func (b *backlog) lose(height uint64, at int64) {
	b.height, b.at = height, at
	b.changes, b.bytes, b.resync = nil, 0, true
}

// take returns the messages to send, in order, and empties the backlog;
// every message is a new one carrying head and epoch (the changes' keys
// are shared, never modified).
func (b *backlog) take(head, epoch uint64) []*api.MemChange {
	var out []*api.MemChange
	if b.resync {
		out = append(out, resyncMessage(b.height, b.at, epoch))
		b.resync = false
	}
	for _, c := range b.changes {
		out = append(out, &api.MemChange{Height: c.GetHeight(), From: c.GetFrom(), AppliedUnixNano: c.GetAppliedUnixNano(),
			Namespaces: c.GetNamespaces()})
	}
	for _, m := range out {
		m.Head, m.Epoch = head, epoch
	}
	b.changes, b.bytes = nil, 0
	return out
}

// empty reports whether take would return nothing.
func (b *backlog) empty() bool { return !b.resync && len(b.changes) == 0 }

// hub fans the applied batches out to the Watch subscribers. Apply
// publishes under the service's lock, so publications come in height
// order; a subscriber joins at the published height (a resync), so it
// sees every batch after it.
type hub struct {
	epoch  uint64
	maxBuf int // each subscriber's backlog bound, in bytes
	mu     struct {
		sync.Mutex
		subs   map[*subscriber]struct{}
		height uint64
		at     int64
		closed bool
	}
	done chan struct{} // closed by close: Watch calls end

	published, overflows atomic.Uint64
}

// subscriber is one Watch call's side of the hub.
type subscriber struct {
	wake chan struct{} // holds a token while the backlog may be non-empty
	log  backlog       // guarded by hub.mu
}

func newHub(height uint64, at int64, epoch uint64, maxBuf int) *hub {
	h := &hub{epoch: epoch, maxBuf: maxBuf, done: make(chan struct{})}
	h.mu.subs = make(map[*subscriber]struct{})
	h.mu.height, h.mu.at = height, at
	return h
}

// subscribe adds a subscriber that starts with a resync at the published
// height.
func (h *hub) subscribe() *subscriber {
	s := &subscriber{wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	s.log = backlog{max: h.maxBuf, resync: true, height: h.mu.height, at: h.mu.at}
	h.mu.subs[s] = struct{}{}
	s.wake <- struct{}{}
	return s
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.mu.subs, s)
}

// watchers returns the number of subscribers.
func (h *hub) watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.mu.subs)
}

// wanted reports whether anyone subscribes: Apply encodes a change only
// then.
func (h *hub) wanted() bool { return h.watchers() > 0 }

// publish hands a batch's change to every subscriber. Called in height
// order (under the service's lock); it never blocks on a subscriber. A
// nil change (nobody subscribed when it was built) still moves the
// height, and makes any subscriber that joined since resync.
func (h *hub) publish(c *api.MemChange, size int, height uint64, at int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mu.height, h.mu.at = height, at
	h.published.Add(1)
	for s := range h.mu.subs {
		if c == nil {
			s.log.lose(height, at)
		} else if s.log.push(c, size) {
			h.overflows.Add(1)
		}
		select {
		case s.wake <- struct{}{}:
		default: // a token is there already
		}
	}
}

// take returns what s has yet to be sent.
func (h *hub) take(s *subscriber) []*api.MemChange {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.log.empty() {
		return nil
	}
	return s.log.take(h.mu.height, h.epoch)
}

// close ends every Watch call; later ones end at once.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.mu.closed {
		h.mu.closed = true
		close(h.done)
	}
}
