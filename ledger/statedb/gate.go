package statedb

import (
	"sync/atomic"
	"time"
)

// Gate lets Close wait for the calls using a database and turns away the
// calls made after Close starts. The zero value is open.
//
// Invariant: a call increments inflight before it checks closed, and Close
// sets closed before it waits for inflight to reach zero, so either the
// call sees closed or Close sees the call. Hence no call that Enter let in
// runs after Shut returns.
type Gate struct {
	inflight atomic.Int64
	closed   atomic.Bool
}

// Enter registers a call; it returns ErrClosed once Shut has started.
// Every successful Enter must be paired with Exit.
func (g *Gate) Enter() error {
	g.inflight.Add(1)
	if g.closed.Load() {
		g.inflight.Add(-1)
		return ErrClosed
	}
	return nil
}

// Exit ends a call registered by Enter.
func (g *Gate) Exit() { g.inflight.Add(-1) }

// Closed reports whether Shut has started.
func (g *Gate) Closed() bool { return g.closed.Load() }

// Shut turns away new calls and waits for the running ones to exit. Only
// the first Shut returns nil; later ones return ErrClosed.
func (g *Gate) Shut() error {
	if !g.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	for g.inflight.Load() > 0 {
		time.Sleep(50 * time.Microsecond)
	}
	return nil
}
