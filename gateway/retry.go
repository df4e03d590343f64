package gateway

import "time"

// retry decides what Endorse does after a round of answers it cannot
// assemble: the endorsers disagree, or a remote peer refused what the
// local peer endorsed. Pure: no clock, no I/O; time is an argument.
// Endorse is its I/O side: it asks, reads the answers' heights, and
// carries out the step (wait for a height, or sleep).
//
// The rule: when the answers' heights differ, a peer is behind; wait for
// it until Timeout after the call began, without spending an attempt (a
// peer reconnecting to the orderers may take seconds). If the local peer
// is the one behind, wait for its height; if a remote one is, ask again
// every backoff (at most maxCatchUpPoll). Otherwise, or once Timeout has
// passed, each round spends an attempt, with a backoff that doubles from
// 20 ms, until EndorseAttempts are spent.
type retry struct {
	start    time.Time
	timeout  time.Duration
	attempts int // EndorseAttempts
	attempt  int // the round being retried, from 1
	backoff  time.Duration
}

func newRetry(start time.Time, timeout time.Duration, attempts int) *retry {
	return &retry{start: start, timeout: timeout, attempts: attempts, attempt: 1, backoff: 20 * time.Millisecond}
}

// stepKind is what Endorse does next.
type stepKind int

const (
	giveUp      stepKind = iota // return the last refusal
	awaitHeight                 // wait until the local peer reaches height, at most until until
	pause                       // sleep wait, then ask again
)

type step struct {
	kind   stepKind
	height uint64
	until  time.Time
	wait   time.Duration
}

// next returns the step after a round whose answers came from heights lo
// to hi, the local peer's at local, at now.
func (r *retry) next(now time.Time, local, lo, hi uint64) step {
	behind := lo < hi && now.Sub(r.start) < r.timeout
	if !behind {
		if r.attempt >= r.attempts {
			return step{kind: giveUp}
		}
		r.attempt++
	}
	switch {
	case behind && local < hi:
		return step{kind: awaitHeight, height: hi, until: r.start.Add(r.timeout)}
	case behind:
		return step{kind: pause, wait: min(r.backoff, maxCatchUpPoll)}
	}
	d := r.backoff
	r.backoff *= 2
	return step{kind: pause, wait: d}
}
