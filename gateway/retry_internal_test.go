package gateway

import (
	"testing"
	"time"
)

// TestRetrySteps walks the retry rule through its cases: disagreement at
// one height spends attempts with a doubling backoff; a peer behind is
// waited for without spending one (the local peer by its height, a remote
// one by polling, at most maxCatchUpPoll apart) until Timeout; after
// Timeout a peer behind spends attempts like a disagreement.
func TestRetrySteps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	type round struct {
		at            time.Duration // after the call began
		local, lo, hi uint64
		want          step
		attempt       int // after the step
	}
	for _, c := range []struct {
		name   string
		rounds []round
	}{
		{"disagreement at one height", []round{
			{0, 5, 5, 5, step{kind: pause, wait: 20 * ms}, 2},
			{30 * ms, 5, 5, 5, step{kind: pause, wait: 40 * ms}, 3},
			{80 * ms, 5, 5, 5, step{kind: pause, wait: 80 * ms}, 4},
			{170 * ms, 5, 5, 5, step{kind: pause, wait: 160 * ms}, 5},
			{340 * ms, 5, 5, 5, step{kind: giveUp}, 5},
		}},
		{"local peer behind", []round{
			{0, 4, 4, 6, step{kind: awaitHeight, height: 6, until: t0.Add(2 * time.Second)}, 1},
			{time.Second, 5, 5, 6, step{kind: awaitHeight, height: 6, until: t0.Add(2 * time.Second)}, 1},
		}},
		{"remote peer behind", []round{
			{0, 6, 4, 6, step{kind: pause, wait: 20 * ms}, 1},
			{500 * ms, 6, 5, 6, step{kind: pause, wait: 20 * ms}, 1},
		}},
		{"behind past the timeout", []round{
			{2 * time.Second, 6, 4, 6, step{kind: pause, wait: 20 * ms}, 2},
			{3 * time.Second, 4, 4, 6, step{kind: pause, wait: 40 * ms}, 3},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRetry(t0, 2*time.Second, 5)
			for i, rd := range c.rounds {
				got := r.next(t0.Add(rd.at), rd.local, rd.lo, rd.hi)
				if got != rd.want || r.attempt != rd.attempt {
					t.Fatalf("round %d (at %v, local %d, heights %d..%d): step %+v, attempt %d; want %+v, attempt %d",
						i, rd.at, rd.local, rd.lo, rd.hi, got, r.attempt, rd.want, rd.attempt)
				}
			}
		})
	}
	// The remote poll is capped at maxCatchUpPoll once the backoff grew.
	r := newRetry(t0, time.Hour, 10)
	for range 4 {
		r.next(t0, 5, 5, 5) // 20, 40, 80, 160 ms
	}
	if got := r.next(t0, 6, 5, 6); got.kind != pause || got.wait != maxCatchUpPoll {
		t.Fatalf("remote poll after the backoff grew to %v: %+v, want a pause of %v", r.backoff, got, maxCatchUpPoll)
	}
}
