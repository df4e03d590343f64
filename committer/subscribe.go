package committer

import (
	"sync"
	"sync/atomic"
	"time"
)

// BlockEvent tells a subscriber that a block is committed: durable in the
// block store and applied to the state.
type BlockEvent struct {
	Number uint64
	TxIDs  []string // "" where the transaction did not decode that far
	Codes  []byte   // api.TxValidationCode per transaction
	// When the block passed each point of the pipeline.
	Received, Verified, Validated, Committed time.Time
}

// Subscription delivers BlockEvents in block order on C. A subscriber that
// falls Buffer events behind is cut off: C is closed and Lagged reports
// true; it must catch up from the block store.
type Subscription struct {
	C      <-chan BlockEvent
	c      chan BlockEvent
	lagged atomic.Bool
	owner  *subscribers
}

// Lagged reports whether the subscription was cut off for falling behind.
func (s *Subscription) Lagged() bool { return s.lagged.Load() }

// Close ends the subscription.
func (s *Subscription) Close() { s.owner.remove(s) }

// Subscribe returns a subscription to commit events with room for buffer
// events (at least 1).
func (c *Committer) Subscribe(buffer int) *Subscription {
	if buffer < 1 {
		buffer = 1
	}
	ch := make(chan BlockEvent, buffer)
	s := &Subscription{C: ch, c: ch, owner: &c.subs}
	c.subs.mu.Lock()
	if c.subs.closed {
		close(ch)
	} else {
		if c.subs.m == nil {
			c.subs.m = make(map[*Subscription]struct{})
		}
		c.subs.m[s] = struct{}{}
	}
	c.subs.mu.Unlock()
	return s
}

type subscribers struct {
	mu     sync.Mutex
	m      map[*Subscription]struct{}
	closed bool
}

func (ss *subscribers) publish(ev BlockEvent) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for s := range ss.m {
		select {
		case s.c <- ev:
		default:
			s.lagged.Store(true)
			delete(ss.m, s)
			close(s.c)
		}
	}
}

func (ss *subscribers) remove(s *Subscription) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, ok := ss.m[s]; ok {
		delete(ss.m, s)
		close(s.c)
	}
}

func (ss *subscribers) closeAll() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for s := range ss.m {
		close(s.c)
	}
	ss.m = nil
	ss.closed = true
}
