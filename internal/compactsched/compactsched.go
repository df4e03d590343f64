// Package compactsched is a Pebble compaction scheduler that costs an
// idle database nothing.
//
// Pebble's default scheduler grants a database as many concurrent
// compactions as the database allows without permission, and samples
// that allowance on a 100 ms ticker for as long as the database is open,
// because a flush can raise it while a compaction waits. A node opens two
// Pebble databases per channel (the block index and the state database),
// so an idle channel woke its process 20 times a second for nothing
// (docs/channels.md, "What an idle channel costs").
//
// Scheduler grants the same compactions by the same rule, but samples
// periodically only while it owes the database a compaction: from a
// refused TrySchedule until a grant pass finds nothing waiting. An idle
// database, which never asks, is never woken.
package compactsched

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// SampleInterval is how often a Scheduler that owes its database a
// compaction samples the allowance (Pebble's default scheduler's period).
const SampleInterval = 100 * time.Millisecond

// Scheduler is a pebble.CompactionScheduler for one database
// (Options.Experimental.CompactionScheduler; a Scheduler registers once).
type Scheduler struct {
	db   pebble.DBForCompaction
	wake chan struct{} // buffered: a refusal or a raised allowance
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	running  int  // compactions granted and not done
	allowed  int  // the allowance last sampled
	owed     bool // a TrySchedule was refused and no pass found nothing waiting since
	closed   bool
	granting bool // a grant pass runs (they are serialized)
	cond     *sync.Cond
}

var _ pebble.CompactionScheduler = (*Scheduler)(nil)

// New returns a Scheduler for one database.
func New() *Scheduler {
	s := &Scheduler{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// Register starts the scheduler for db.
func (s *Scheduler) Register(_ int, db pebble.DBForCompaction) {
	s.db = db
	go s.loop()
}

// Unregister stops the scheduler; no call reaches the database after it
// returns.
func (s *Scheduler) Unregister() {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for s.granting {
		s.cond.Wait()
	}
}

// TrySchedule grants a compaction if the database allows one more than
// run now; a refusal makes the scheduler owe it one.
func (s *Scheduler) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false, nil
	}
	s.allowed = s.db.GetAllowedWithoutPermission()
	if s.allowed > s.running {
		s.running++
		s.mu.Unlock()
		return true, s
	}
	s.owed = true
	s.mu.Unlock()
	s.poke()
	return false, nil
}

// UpdateGetAllowedWithoutPermission samples the allowance at once (a
// flush may have raised it) and grants what it newly allows.
func (s *Scheduler) UpdateGetAllowedWithoutPermission() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	allowed := s.db.GetAllowedWithoutPermission()
	raised := allowed > s.allowed
	s.allowed = allowed
	s.mu.Unlock()
	if raised {
		s.poke()
	}
}

// Started, MeasureCPU and CumulativeStats are the grant handle's
// reports, which this scheduler does not use.
func (s *Scheduler) Started()                                          {}
func (s *Scheduler) MeasureCPU(pebble.CompactionGoroutineKind)         {}
func (s *Scheduler) CumulativeStats(pebble.CompactionGrantHandleStats) {}

// Done ends a granted compaction and grants waiting ones.
func (s *Scheduler) Done() {
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
	s.grant()
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop runs a grant pass at each poke, and every SampleInterval while the
// scheduler owes the database a compaction.
func (s *Scheduler) loop() {
	defer close(s.done)
	var ticker *time.Ticker
	var tick <-chan time.Time
	for {
		select {
		case <-s.stop:
			if ticker != nil {
				ticker.Stop()
			}
			return
		case <-s.wake:
		case <-tick:
		}
		owed := s.grant()
		switch {
		case owed && ticker == nil:
			ticker = time.NewTicker(SampleInterval)
			tick = ticker.C
		case !owed && ticker != nil:
			ticker.Stop()
			ticker, tick = nil, nil
		}
	}
}

// grant runs one grant pass: it samples the allowance and, while it
// permits more compactions than run, offers the database the compaction
// it has waiting. It reports whether the scheduler still owes the
// database one afterwards. Passes are serialized; the database's picking
// (GetWaitingCompaction) is called only when a grant is possible, so no
// picked compaction is wasted.
func (s *Scheduler) grant() (owed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.granting {
		s.cond.Wait()
	}
	if s.closed {
		return false
	}
	s.allowed = s.db.GetAllowedWithoutPermission()
	free := s.allowed - s.running
	if free <= 0 {
		return s.owed
	}
	s.granting = true
	s.mu.Unlock()
	drained := false
	for ; free > 0; free-- {
		if waiting, _ := s.db.GetWaitingCompaction(); !waiting {
			drained = true
			break
		}
		if !s.db.Schedule(s) {
			break
		}
		s.mu.Lock()
		s.running++
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.granting = false
	s.cond.Broadcast()
	if drained {
		s.owed = false
	}
	return s.owed
}
