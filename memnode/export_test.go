package memnode

import (
	"context"
	"time"
)

// WaitFeed waits until cond holds of a reader's feed metrics, checked
// whenever the feed's state changes: tests wait on the feed's loss or
// resync without sleeping.
func WaitFeed(ctx context.Context, c *Client, cond func(FeedMetrics) bool) error {
	return c.follow.wait(ctx, func() bool { return cond(c.follow.metrics()) })
}

// SetCloseGrace sets how long Close lets running calls finish before it
// cuts them off, and returns the previous value.
func SetCloseGrace(d time.Duration) time.Duration {
	old := closeGrace
	closeGrace = d
	return old
}

// SetApplied makes s call f after each batch it applies, before the
// Apply's answer is sent: a test holds an Apply in flight with it.
func SetApplied(s *Server, f func(height uint64)) { s.svc.applied.Store(&f) }
