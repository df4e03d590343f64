// Package gopool runs short functions on reused goroutines.
//
// A new goroutine starts with a small stack and grows it by copying as
// its calls deepen; a request handler that verifies a signature or runs
// a contract grows it every time, which cost a peer 4% of its CPU when
// every call had a fresh goroutine. A Pool hands each function to an idle
// worker, whose stack has already grown, or to a new goroutine that then
// stays as a worker.
package gopool

import (
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of a Pool's zero value.
const (
	DefaultMaxIdle = 256              // idle workers kept
	DefaultIdleFor = 10 * time.Second // how long an idle worker waits
)

// Pool runs functions on reused goroutines. Its zero value is ready to
// use and keeps up to DefaultMaxIdle idle workers for DefaultIdleFor each.
// Go never blocks and never queues: a function runs at once, on an idle
// worker or a new goroutine.
type Pool struct {
	once sync.Once
	w    *workers
}

// workers is what a pool's goroutines share. They hold it and never the
// Pool, which callers embed in larger values (mux.Server): an idle worker
// holding an interior pointer would keep the whole value reachable, and
// after a benchmark round that was a closed network's server, gateway,
// committer and in-memory state, for DefaultIdleFor.
type workers struct {
	work chan func() // unbuffered: a send succeeds only into a waiting worker
	idle atomic.Int32
}

func (p *Pool) init() *workers {
	p.once.Do(func() { p.w = &workers{work: make(chan func())} })
	return p.w
}

// Go runs f on a goroutine of the pool.
func (p *Pool) Go(f func()) {
	w := p.init()
	select {
	case w.work <- f:
	default:
		go w.worker(f)
	}
}

// Idle returns the number of idle workers.
func (p *Pool) Idle() int { return int(p.init().idle.Load()) }

func (w *workers) worker(f func()) {
	var t *time.Timer
	for {
		f()
		// Nor may an idle worker keep its last function, and all that the
		// function captured, reachable.
		f = nil
		if w.idle.Add(1) > DefaultMaxIdle {
			w.idle.Add(-1)
			return
		}
		if t == nil {
			t = time.NewTimer(DefaultIdleFor)
			defer t.Stop()
		} else {
			t.Reset(DefaultIdleFor)
		}
		select {
		case f = <-w.work:
			w.idle.Add(-1)
		case <-t.C:
			w.idle.Add(-1)
			return
		}
	}
}
