package memdb

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// checkpointer writes a DB's published versions to its directory: in the
// background when Options say so, synchronously for Apply with sync and
// at Close.
//
// Invariants:
//   - mu serialises checkpoint writes, and a version is written only if
//     its savepoint is above the last one written, so files appear in
//     savepoint order and never go back.
//   - A version is immutable once published, so writing it needs no lock
//     against Apply; the copy-on-write tree shares every node the writer
//     has not changed since, so a checkpoint's cost in memory is the
//     nodes that Apply copies while it runs.
//   - failed holds the error of the last checkpoint attempt while it
//     stands; Apply refuses new batches meanwhile (as an on-disk backend
//     whose writes fail would), and the next successful checkpoint clears
//     it.
type checkpointer struct {
	dir  string
	opts Options
	kick chan struct{} // buffered 1: a checkpoint is due
	stop chan struct{} // closed by Close
	done sync.WaitGroup

	written atomic.Uint64 // savepoint of the newest checkpoint on disk
	failed  atomic.Pointer[error]

	mu struct {
		sync.Mutex
		stats Stats
	}
}

// Stats describes a checkpointing DB's checkpoints.
type Stats struct {
	Checkpoints  int64         // written since Open
	Savepoint    uint64        // of the newest checkpoint on disk
	Bytes        int64         // size of the newest checkpoint
	LastDuration time.Duration // to write the newest checkpoint
	Failures     int64         // attempts that failed since Open
	Err          error         // of the last attempt, if it failed
}

func (s Stats) String() string {
	str := fmt.Sprintf("checkpoints %d, newest at savepoint %d (%d bytes in %v), failures %d",
		s.Checkpoints, s.Savepoint, s.Bytes, s.LastDuration.Round(time.Microsecond), s.Failures)
	if s.Err != nil {
		str += ", last error: " + s.Err.Error()
	}
	return str
}

func newCheckpointer(dir string, opts Options, savepoint uint64) *checkpointer {
	c := &checkpointer{dir: dir, opts: opts, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	c.written.Store(savepoint)
	c.mu.stats.Savepoint = savepoint
	return c
}

// start runs the background loop on d's published versions.
func (c *checkpointer) start(d *DB) {
	c.done.Add(1)
	go c.loop(d)
}

func (c *checkpointer) loop(d *DB) {
	defer c.done.Done()
	t := time.NewTicker(c.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		case <-c.kick:
		}
		if v := d.cur.Load(); v != nil {
			_ = c.write(v) // recorded in failed and Stats
		}
	}
}

// applied tells the checkpointer that v was published.
func (c *checkpointer) applied(v *version) {
	if v.savepoint-c.written.Load() >= c.opts.EveryBlocks {
		select {
		case c.kick <- struct{}{}:
		default: // one is due already
		}
	}
}

// err returns the standing error of the last checkpoint attempt.
func (c *checkpointer) err() error {
	if e := c.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// write writes v unless a checkpoint at or above its savepoint exists.
func (c *checkpointer) write(v *version) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v.savepoint <= c.written.Load() {
		return nil
	}
	start := time.Now()
	size, err := writeCheckpoint(c.dir, v)
	if err == nil {
		c.written.Store(v.savepoint)
		err = pruneCheckpoints(c.dir)
	}
	s := &c.mu.stats
	if err != nil {
		s.Failures++
		s.Err = err
		c.failed.Store(&err)
		return err
	}
	s.Checkpoints++
	s.Savepoint, s.Bytes, s.LastDuration, s.Err = v.savepoint, size, time.Since(start), nil
	c.failed.Store(nil)
	return nil
}

// close stops the background loop and waits for a checkpoint it is
// writing.
func (c *checkpointer) close() {
	close(c.stop)
	c.done.Wait()
}

func (c *checkpointer) stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.stats
}

// Open opens the checkpointing in-memory database in dir, creating dir if
// needed: the state is loaded from the newest checkpoint there (empty,
// savepoint 0, if there is none), and checkpoints are written as opts
// say. dir must hold a directory of Format or nothing (statedb.ErrFormat
// otherwise); a checkpoint file of another backend or format version is
// refused with statedb.ErrFormat, a damaged one with statedb.ErrCorrupt.
func Open(dir string, opts Options) (*DB, error) {
	if err := statedb.PrepareOpen(dir, Format, &opts, nil); err != nil {
		return nil, err
	}
	sps, err := checkpointFiles(dir)
	if err != nil {
		return nil, err
	}
	loaded := &version{tree: newTree()}
	if len(sps) > 0 {
		if loaded, err = readCheckpoint(dirFile(dir, ckptName(sps[0]))); err != nil {
			return nil, err
		}
		if loaded.savepoint != sps[0] {
			return nil, corrupt(dirFile(dir, ckptName(sps[0])), fmt.Sprintf("it holds savepoint %d, not the %d its name says", loaded.savepoint, sps[0]))
		}
	}
	d := newDB(loaded)
	d.disk = newCheckpointer(dir, opts, loaded.savepoint)
	d.disk.start(d)
	return d, nil
}

// Checkpoint writes the current state to disk now, unless it is there
// already. It is an error for a DB from New.
func (d *DB) Checkpoint() error {
	if d.disk == nil {
		return fmt.Errorf("memdb: Checkpoint of a database from New, which has no directory")
	}
	v, err := d.load()
	if err != nil {
		return err
	}
	return d.disk.write(v)
}

// Stats returns the checkpoint statistics; zero for a DB from New.
func (d *DB) Stats() Stats {
	if d.disk == nil {
		return Stats{}
	}
	return d.disk.stats()
}
