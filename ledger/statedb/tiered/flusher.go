package tiered

import (
	"fmt"
	"sync"
	"time"
)

// flusher is the background loop that writes the memory tier's newest
// versions through to the storage tier and evicts cold durable versions.
// It decides with flushPolicy.decide and does the I/O; the commit path
// (DB.Apply) never writes to storage and never evicts, it only waits
// here when the memory tier has no room or when it asked for sync.
//
// Ordering, the invariant that makes eviction safe: a step first commits
// the pending batches and their height to storage, and only then, under
// DB's view lock, settles the memory tier (forgets those batches, drops
// the victims). A version leaves the memory tier only once storage holds
// it, and a reader (which takes its memory view and storage snapshot
// under the same lock) never sees a memory view that lacks a version its
// storage snapshot lacks too.
type flusher struct {
	db     *DB
	policy flushPolicy
	wake   chan struct{} // buffered 1: a request to look again
	stop   chan bool     // carries whether to flush before exiting
	done   chan struct{}

	mu struct {
		sync.Mutex
		cond      *sync.Cond
		durable   uint64 // the storage tier's savepoint
		synced    uint64 // the highest savepoint written with sync
		waiting   int64  // bytes an Apply waits to add
		syncTo    uint64 // the highest height an Apply(sync) waits for
		lastFlush time.Time
		err       error // the first failure; the flusher stops at it
		stopped   bool
	}
	flushes, evicted, stalls uint64 // under mu
}

func newFlusher(db *DB, p flushPolicy, durable uint64, now time.Time) *flusher {
	f := &flusher{db: db, policy: p, wake: make(chan struct{}, 1), stop: make(chan bool, 1), done: make(chan struct{})}
	f.mu.cond = sync.NewCond(&f.mu.Mutex)
	f.mu.durable = durable
	f.mu.lastFlush = now
	go f.run()
	return f
}

func (f *flusher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run is the loop: wait for a poke, the deadline or stop, then step.
func (f *flusher) run() {
	defer close(f.done)
	timer := time.NewTimer(f.policy.interval)
	defer timer.Stop()
	for {
		select {
		case <-f.wake:
		case <-timer.C:
		case flush := <-f.stop:
			if flush {
				f.step(true)
			}
			f.mu.Lock()
			f.mu.stopped = true
			f.mu.cond.Broadcast()
			f.mu.Unlock()
			return
		}
		next := f.step(false)
		timer.Reset(time.Until(next))
	}
}

// step takes one decision and carries it out; it returns when to look
// again by time alone.
func (f *flusher) step(closing bool) time.Time {
	d := f.db
	f.mu.Lock()
	if f.mu.err != nil {
		f.mu.Unlock()
		return time.Now().Add(time.Hour) // failed: Apply refuses batches, nothing to do
	}
	view := d.mem.View()
	s := tierState{height: view.Height(), durable: f.mu.durable, synced: f.mu.synced, bytes: view.Bytes(), bound: d.opts.MemoryBytes,
		waiting: f.mu.waiting, syncTo: f.mu.syncTo, lastFlush: f.mu.lastFlush, closing: closing}
	f.mu.Unlock()
	now := time.Now()
	pl := f.policy.decide(s, now)
	durable := s.durable
	var err error
	if pl.flush {
		// The savepoint written is the height of the last batch written,
		// not s.height: batches applied since s was read are in Pending
		// too, and storage must never hold versions above its savepoint.
		batches := d.mem.Pending(durable)
		height := durable
		if n := len(batches); n > 0 {
			height = batches[n-1].height
		}
		if err = d.storage.write(batches, height, pl.sync); err == nil {
			durable = height
		}
	}
	var evict []string
	if err == nil && pl.evictTo >= 0 {
		v := d.mem.View()
		evict = victims(v.Cold(durable), v.Bytes(), pl.evictTo)
	}
	dropped := 0
	if err == nil && (pl.flush || len(evict) > 0) {
		d.viewMu.Lock()
		dropped = d.mem.Settle(durable, evict)
		d.viewMu.Unlock()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.mu.err = err
	}
	if pl.flush && err == nil {
		f.mu.durable = durable
		if pl.sync {
			f.mu.synced = durable
		}
		f.mu.lastFlush = time.Now()
		f.flushes++
	}
	f.evicted += uint64(dropped)
	f.mu.cond.Broadcast()
	return f.policy.deadline(f.mu.lastFlush, time.Now())
}

// room waits until the memory tier can take size more bytes within its
// bound, or holds nothing (a batch larger than the tier is admitted
// alone). It returns the flusher's error if it has failed.
func (f *flusher) room(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	stalled := false
	for f.mu.err == nil && !f.mu.stopped {
		used := f.db.mem.View().Bytes()
		if used == 0 || used+size <= f.db.opts.MemoryBytes {
			break
		}
		if !stalled {
			stalled = true
			f.stalls++
		}
		f.mu.waiting = size
		f.poke()
		f.mu.cond.Wait()
	}
	f.mu.waiting = 0
	return f.errLocked()
}

// syncedAt waits until the storage tier holds height durably: written
// with sync.
func (f *flusher) syncedAt(height uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.mu.err == nil && !f.mu.stopped && f.mu.synced < height {
		f.mu.syncTo = max(f.mu.syncTo, height)
		f.poke()
		f.mu.cond.Wait()
	}
	if err := f.errLocked(); err != nil {
		return err
	}
	if f.mu.synced < height {
		return fmt.Errorf("tiered: closed before height %d was synced (storage synced %d)", height, f.mu.synced)
	}
	return nil
}

func (f *flusher) errLocked() error {
	if f.mu.err != nil {
		return fmt.Errorf("tiered: refusing batches since the flusher failed: %w", f.mu.err)
	}
	return nil
}

// err returns the flusher's failure, if any.
func (f *flusher) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.errLocked()
}

// halt stops the loop, after a final flush of everything pending if
// flush is set, and returns the flusher's failure, if any.
func (f *flusher) halt(flush bool) error {
	f.stop <- flush
	<-f.done
	return f.err()
}

// durable returns the storage tier's savepoint.
func (f *flusher) durable() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.durable
}
