package committer

import (
	"fmt"
	"sync"
	"time"
)

// Stage names a pipeline stage in busy-time accounting.
type Stage uint8

const (
	// StageVerify is stage 1: one block's decode and signature checks,
	// from its first job picked up to its last job done.
	StageVerify Stage = iota
	// StageValidate is stage 2 on one block: duplicate ids, MVCC, apply.
	StageValidate
	// StagePersist is stage 3 on one group: append, fsync, state batch,
	// notify.
	StagePersist
	// StageReceive is Deliver's own work on one accepted block, on the
	// caller's goroutine: decoding it and checking its place in the chain
	// (number, previous hash, header hash), up to the point where it is
	// queued for stage 1. It is the block's work before any stage-1 job
	// runs; waiting for room in the window and queueing are not in it.
	StageReceive
	numStages
)

func (s Stage) String() string {
	switch s {
	case StageVerify:
		return "verify"
	case StageValidate:
		return "validate"
	case StagePersist:
		return "persist"
	case StageReceive:
		return "receive"
	}
	return fmt.Sprintf("Stage(%d)", uint8(s))
}

// BusyFunc is told of every interval during which a stage worked on a
// block (receive, verify, validate) or a group of blocks (persist), once
// the interval ends. It is called from the stage's own goroutines
// (receive's from Deliver's caller), verify's from several at once, so
// it must be safe for concurrent use, quick,
// and must not block: the energy bench lays these intervals over its
// energy log to exclude the peer's idle time (energy.Overlay).
//
// Intervals of one stage may overlap (stage 1 works on the tail of one
// block while starting the next); queueing before a stage is not in
// them, so an interval is work, not latency.
type BusyFunc func(s Stage, start, end time.Time)

// busyClock sums the time one stage was busy, counting overlapping
// intervals once. It assumes intervals arrive in the order they end, as
// they do from the single-goroutine stages 2 and 3; stage 1's blocks end
// nearly in order, and the part of a late interval that lies before the
// last end counted is dropped, so the sum may fall short of the exact
// union by the overlap of out-of-order blocks, never exceed it.
type busyClock struct {
	mu    sync.Mutex
	last  time.Time
	total time.Duration
}

func (b *busyClock) add(start, end time.Time) {
	b.mu.Lock()
	if start.Before(b.last) {
		start = b.last
	}
	if end.After(start) {
		b.total += end.Sub(start)
		b.last = end
	}
	b.mu.Unlock()
}

func (b *busyClock) read() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// busy records one interval of stage s: in the stage's clock, in the
// pipeline's (intervals are reported as they end, whatever the stage, so
// busyClock's ordering assumption holds across stages too) and, if the
// caller asked, through Options.OnBusy.
func (c *Committer) busy(s Stage, start, end time.Time) {
	c.metrics.busy[s].add(start, end)
	c.metrics.pipeline.add(start, end)
	if c.opts.OnBusy != nil {
		c.opts.OnBusy(s, start, end)
	}
}
