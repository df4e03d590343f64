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
	work chan func() // unbuffered: a send succeeds only into a waiting worker
	idle atomic.Int32
}

// Go runs f on a goroutine of the pool.
func (p *Pool) Go(f func()) {
	p.once.Do(func() { p.work = make(chan func()) })
	select {
	case p.work <- f:
	default:
		go p.worker(f)
	}
}

// Idle returns the number of idle workers.
func (p *Pool) Idle() int { return int(p.idle.Load()) }

func (p *Pool) worker(f func()) {
	var t *time.Timer
	for {
		f()
		if p.idle.Add(1) > DefaultMaxIdle {
			p.idle.Add(-1)
			return
		}
		if t == nil {
			t = time.NewTimer(DefaultIdleFor)
			defer t.Stop()
		} else {
			t.Reset(DefaultIdleFor)
		}
		select {
		case f = <-p.work:
			p.idle.Add(-1)
		case <-t.C:
			p.idle.Add(-1)
			return
		}
	}
}
