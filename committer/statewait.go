package committer

import (
	"errors"
	"fmt"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// A state database reached over the network (a memory node) can fail in
// two retryable ways, and the committer never fails for either:
//
//   - statedb.ErrUnavailable: the node does not answer. Stage 2's reads
//     and stage 3's state batch wait and retry with backoff: the pipeline
//     stops taking blocks (backpressure: Deliver blocks on the byte
//     window), and no block is skipped. Endorsers' reads fail with the
//     error at once, so the gateway names it.
//   - statedb.ErrStateLost: the node restarted and holds only the state
//     of its storage savepoint. restoreLocked re-applies the blocks above
//     it, up to the height this committer applied, from the block store
//     (the truth), with their stored codes, as New's recovery does; then
//     the failed call is retried. An endorser's read that meets the loss
//     fails with it and asks restoreLoop to restore in the background, so
//     an idle peer heals too.
//
// Ordering: stateMu is held by stage 3 from its state batch until it has
// published the new height, and by every restore, so a restore reads
// c.height when the database applied exactly that height (before the
// loss) and re-applies exactly what was lost.

// stateRetryMax bounds the wait between retries.
const stateRetryMax = time.Second

// retryState runs fn until it succeeds or fails with an error that is not
// retryable; restore brings lost state back (with stateMu held or not, as
// the caller is). It gives up only when the committer is closing.
func (c *Committer) retryState(op string, fn func() error, restore func() error) error {
	wait := 5 * time.Millisecond
	logged := false
	pause := func(err error) error {
		select {
		case <-time.After(wait):
		case <-c.stopping:
			return fmt.Errorf("closing while waiting for the state database: %w", err)
		}
		wait = min(2*wait, stateRetryMax)
		return nil
	}
	for losses := 0; ; {
		err := fn()
		if errors.Is(err, statedb.ErrStateLost) {
			c.metrics.stateLosses.Add(1)
			c.log.Warn("state database lost state; re-applying blocks from the block store", "op", op, "err", err)
			// A database that reports a loss again right after a
			// restore is not hammered: later rounds back off.
			if losses++; losses > 1 {
				if perr := pause(err); perr != nil {
					return perr
				}
			}
			err = restore()
			if err == nil {
				continue
			}
		}
		if err == nil || !errors.Is(err, statedb.ErrUnavailable) {
			if logged && err == nil {
				c.log.Info("state database answers again", "op", op)
			}
			return err
		}
		c.metrics.stateWaits.Add(1)
		if !logged {
			logged = true
			c.log.Warn("state database unavailable; waiting (blocks are not taken meanwhile)", "op", op, "err", err)
		}
		if perr := pause(err); perr != nil {
			return perr
		}
	}
}

// restoreState is restoreLocked for callers that do not hold stateMu.
func (c *Committer) restoreState() error {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	return c.restoreLocked()
}

// restoreLocked re-applies the blocks between the state database's
// savepoint (which Savepoint lowers to the node's after a loss) and the
// height this committer applied, from the block store. It retries while
// the database is unavailable or loses state again.
func (c *Committer) restoreLocked() error {
	return c.retryState("restore", func() error {
		sp, err := c.db.Savepoint()
		if err != nil {
			return err
		}
		target := c.height.Load()
		if sp >= target {
			return nil
		}
		start := time.Now()
		if err := c.replay(sp, target); err != nil {
			return err
		}
		c.log.Info("state restored from the block store", "from", sp, "to", target, "took", time.Since(start))
		return nil
	}, func() error { return nil }) // a loss during the replay: start it over
}

// restoreLoop restores in the background when an endorser's read found
// the state lost, until Close.
func (c *Committer) restoreLoop() {
	defer c.restorer.Done()
	for {
		select {
		case <-c.restoreKick:
		case <-c.stopping:
			return
		}
		if err := c.restoreState(); err != nil && !errors.Is(err, statedb.ErrUnavailable) {
			c.fail(fmt.Errorf("restoring the state database: %w", err))
		}
	}
}

// patientDB is the state database as stage 2 reads it: it waits out an
// unavailable database and restores a lost one (retryState).
type patientDB struct {
	statedb.DB
	c *Committer
}

func (p *patientDB) Get(ns, key string) (v statedb.Value, found bool, err error) {
	err = p.c.retryState("read", func() error {
		v, found, err = p.DB.Get(ns, key)
		return err
	}, p.c.restoreState)
	return v, found, err
}

// Scan restarts after a failure just past the last key delivered, so fn
// sees every key once.
func (p *patientDB) Scan(ns, start, end string, fn func(key string, v statedb.Value) bool) error {
	from, stopped := start, false
	return p.c.retryState("range read", func() error {
		return p.DB.Scan(ns, from, end, func(key string, v statedb.Value) bool {
			from = key + "\x00"
			stopped = !fn(key, v)
			return !stopped
		})
	}, p.c.restoreState)
}

// patientVersions adds GetVersions where the database has it.
type patientVersions struct {
	*patientDB
	vg statedb.VersionGetter
}

func (p patientVersions) GetVersions(keys []statedb.Key, out []statedb.VersionResult) error {
	return p.c.retryState("read", func() error { return p.vg.GetVersions(keys, out) }, p.c.restoreState)
}

func (c *Committer) patient(db statedb.DB) statedb.DB {
	p := &patientDB{DB: db, c: c}
	if vg, ok := db.(statedb.VersionGetter); ok {
		return patientVersions{p, vg}
	}
	return p
}

// noticingDB is the state database as endorsers read it: errors go back
// at once, and a lost state wakes restoreLoop.
type noticingDB struct {
	statedb.DB
	c *Committer
}

func (n noticingDB) notice(err error) error {
	if errors.Is(err, statedb.ErrStateLost) {
		select {
		case n.c.restoreKick <- struct{}{}:
		default:
		}
	}
	return err
}

func (n noticingDB) Get(ns, key string) (statedb.Value, bool, error) {
	v, found, err := n.DB.Get(ns, key)
	return v, found, n.notice(err)
}

func (n noticingDB) Scan(ns, start, end string, fn func(key string, v statedb.Value) bool) error {
	return n.notice(n.DB.Scan(ns, start, end, fn))
}
