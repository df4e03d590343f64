package tiered

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// The flusher's decisions are made here, by pure functions: what the tier
// holds and the time come in as arguments, what to do goes out, and the
// flusher's loop (flusher.go) does the I/O. The rules:
//
//   - Flush (write every version above the storage savepoint through to
//     storage, with the published height as the new savepoint) when blocks
//     are waiting and any of: FlushBlocks of them are waiting; an Apply
//     waits for room; the tier is above its high-water mark; FlushInterval
//     has passed since the last flush; the DB is closing. Flush with sync,
//     even with no block waiting, when an Apply(sync) waits for a height
//     not yet synced, and when closing.
//   - Evict only after the flush of the same step, so only versions the
//     storage tier holds are dropped, and only when an Apply waits for
//     room (down to the room it needs, or to the low-water mark if that
//     is lower) or the tier is above its high-water mark (down to the
//     low-water mark). The gap between the marks makes eviction a batch
//     job, not a per-block one.
//   - Victims are the coldest durable versions: least recently read or
//     written first, the larger first among equals.

// Water marks, as fractions of the memory tier's bound.
const (
	highWater = 0.90
	lowWater  = 0.75
)

// tierState is what the flusher knows when it decides.
type tierState struct {
	height, durable uint64    // the published height and the storage savepoint
	synced          uint64    // the highest savepoint written with sync
	bytes, bound    int64     // what the memory tier holds, and its bound
	waiting         int64     // bytes an Apply waits to add; 0 if none
	syncTo          uint64    // the highest height an Apply(sync) waits for
	lastFlush       time.Time // when the last flush ended
	closing         bool
}

// plan is the flusher's next step.
type plan struct {
	flush   bool
	sync    bool  // flush with sync
	evictTo int64 // the byte count to evict down to; -1: do not evict
}

// flushPolicy holds the options decide needs.
type flushPolicy struct {
	blocks   uint64
	interval time.Duration
}

// decide returns the step to take at now.
func (p flushPolicy) decide(s tierState, now time.Time) plan {
	high := int64(float64(s.bound) * highWater)
	low := int64(float64(s.bound) * lowWater)
	behind := s.height - s.durable
	pl := plan{evictTo: -1}
	pl.sync = s.syncTo > s.synced || (s.closing && behind > 0)
	pl.flush = pl.sync || behind > 0 && (behind >= p.blocks || s.waiting > 0 || s.bytes > high ||
		!now.Before(s.lastFlush.Add(p.interval)) || s.closing)
	switch {
	case s.waiting > 0:
		pl.evictTo = max(0, min(low, s.bound-s.waiting))
	case s.bytes > high:
		pl.evictTo = low
	}
	if pl.evictTo >= s.bytes {
		pl.evictTo = -1
	}
	return pl
}

// deadline returns when to call decide again by time alone: the end of
// the interval since the last flush or, if that has passed (nothing was
// behind then), one interval from now, so an idle tier does not spin.
func (p flushPolicy) deadline(lastFlush, now time.Time) time.Time {
	if d := lastFlush.Add(p.interval); d.After(now) {
		return d
	}
	return now.Add(p.interval)
}

// candidate is one durable version the memory tier could drop.
type candidate struct {
	key     string
	bytes   int64
	touched uint64 // the tier's clock at the last read or write
}

// victims returns the keys to drop, coldest first, so that a tier
// holding used bytes holds at most target; it returns every candidate if
// even that is not enough. cands is reordered.
func victims(cands []candidate, used, target int64) []string {
	if used <= target {
		return nil
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := cmp.Compare(a.touched, b.touched); c != 0 {
			return c
		}
		if c := cmp.Compare(b.bytes, a.bytes); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	var out []string
	for _, c := range cands {
		if used <= target {
			break
		}
		out = append(out, c.key)
		used -= c.bytes
	}
	return out
}
