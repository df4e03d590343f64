package gateway

import (
	"sync"
	"time"
)

// inflight bounds the transactions submitted through this gateway that
// its peer has not yet committed: the gateway's backpressure. When the
// peer falls behind the ordering service, its count grows; at the bound,
// Endorse and Submit answer 429 with a retry-after hint instead of letting
// work queue up without bound at the orderer and in this peer's window.
// Invariants:
//   - An id is added when its Submit is forwarded and removed when a block
//     holding it commits here (whatever its code), when the orderer
//     refuses it, or after maxAge (a transaction the ordering service lost;
//     the client resubmits it).
//   - The retry hint is the time the peer needs, at its recent commit
//     rate, to bring the count back under half the bound.
type inflight struct {
	max int
	now func() time.Time
	mu  struct {
		sync.Mutex
		ids       map[string]time.Time // when it was added
		swept     time.Time
		rateStart time.Time // start of the current rate window
		done      int       // removals in the current window
		rate      float64   // removals per second, last full window
	}
}

// maxAge is how long a submitted transaction may stay uncommitted before
// it stops counting against the bound.
const maxAge = 2 * time.Minute

// rateWindow is how often the commit rate is recomputed.
const rateWindow = time.Second

func newInflight(max int, now func() time.Time) *inflight {
	f := &inflight{max: max, now: now}
	f.mu.ids = map[string]time.Time{}
	f.mu.rateStart = now()
	return f
}

// full reports whether the bound is reached and, if so, how long to wait.
func (f *inflight) full() (bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.mu.ids) < f.max {
		return false, 0
	}
	now := f.now()
	if now.Sub(f.mu.swept) > maxAge/4 {
		f.mu.swept = now
		for id, t := range f.mu.ids {
			if now.Sub(t) > maxAge {
				delete(f.mu.ids, id)
			}
		}
		if len(f.mu.ids) < f.max {
			return false, 0
		}
	}
	return true, f.retryAfterLocked()
}

// add counts id as in flight; false (and the retry hint) when full.
func (f *inflight) add(id string) (bool, time.Duration) {
	if full, wait := f.full(); full {
		return false, wait
	}
	f.mu.Lock()
	f.mu.ids[id] = f.now()
	f.mu.Unlock()
	return true, 0
}

// drop stops counting id, which the ordering service did not take.
func (f *inflight) drop(id string) {
	f.mu.Lock()
	delete(f.mu.ids, id)
	f.mu.Unlock()
}

// ids returns the ids in flight.
func (f *inflight) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.mu.ids))
	for id := range f.mu.ids {
		out = append(out, id)
	}
	return out
}

// remove stops counting the given ids, which committed.
func (f *inflight) remove(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		if _, ok := f.mu.ids[id]; ok {
			delete(f.mu.ids, id)
			f.mu.done++
		}
	}
	if now := f.now(); now.Sub(f.mu.rateStart) >= rateWindow {
		f.mu.rate = float64(f.mu.done) / now.Sub(f.mu.rateStart).Seconds()
		f.mu.rateStart, f.mu.done = now, 0
	}
}

// count returns the transactions in flight.
func (f *inflight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mu.ids)
}

// retryAfterLocked estimates how long until the count is back under half
// the bound, from 10 ms to 5 s; 250 ms before any commit rate is known.
func (f *inflight) retryAfterLocked() time.Duration {
	const lo, hi, unknown = 10 * time.Millisecond, 5 * time.Second, 250 * time.Millisecond
	if f.mu.rate <= 0 {
		return unknown
	}
	excess := float64(len(f.mu.ids) - f.max/2)
	d := time.Duration(excess / f.mu.rate * float64(time.Second))
	return min(max(d, lo), hi)
}
