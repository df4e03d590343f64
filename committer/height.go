package committer

import (
	"context"
	"sync"
)

// heightSignal wakes the goroutines waiting for the height to move: its
// channel is closed and replaced at each move, so a wait costs nothing
// until then (no polling, one channel for any number of waiters).
type heightSignal struct {
	mu sync.Mutex
	ch chan struct{} // nil until someone waits
}

// next returns a channel closed at the next move.
func (s *heightSignal) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *heightSignal) signal() {
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.mu.Unlock()
}

// WaitHeight returns once the committer has committed h blocks (Height
// reaches h), or ctx's error if it ends first. An endorser uses it to
// wait for the state a proposal asks for (endorser.Config.Synced).
func (c *Committer) WaitHeight(ctx context.Context, h uint64) error {
	for {
		moved := c.moved.next() // before reading the height: no move is missed
		if c.height.Load() >= h {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-moved:
		}
	}
}
