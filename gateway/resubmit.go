package gateway

import (
	"slices"
	"strings"
	"time"
)

// resubmit is the pure decision core of resubmission: which transactions
// submitted through this gateway the ordering service has most likely lost,
// and when to send each again. Time is an argument; the caller (resubmitter)
// does the I/O and the locking.
//
// Why the gateway decides, and by a deadline. An orderer answers 200 when it
// admits a transaction, not when it is ordered: a Raft leader that dies (or
// loses its leadership) drops what it had queued or proposed and not yet
// committed, and a follower that forwarded a transaction to it has forgotten
// it. No orderer then knows the transaction exists, so no orderer can say it
// was lost; only the party that still holds its bytes and waits for its
// commit can notice its absence. That is this gateway: its peer's commit
// events say what was ordered, and a transaction absent long after
// transactions admitted like it committed is resubmitted. The deadline is
// derived from the admit-to-commit latency the gateway observes (not from a
// fixed timeout), so a client sees a leader loss as the time an election
// takes, not its own deadline. A signal from the orderers (a leader change)
// would be faster by a fraction of a second, but would need every orderer
// to track what it forwarded and a new message to say so; the deadline
// covers every way a transaction can be lost, with no change to the wire.
//
// Invariants:
//   - Resubmitting is safe. A tx id commits once: the committer marks a
//     second copy DUPLICATE_TXID, which claims nothing (api.TxIDCounts), so
//     commit events and the block store's index answer with the first
//     copy's block and code, whichever copy that is. A needless resubmission
//     costs an ordered duplicate, not a wrong answer.
//   - A transaction is resubmitted when it has not committed wait(n) after
//     its n-th sending (n = 0 the client's submit): factor times the
//     largest latency observed over the last one to two latencyWindows,
//     within [floor, ceil], doubled per resubmission and at most ceil. At
//     most maxResubmits times; then it is forgotten (the client's own
//     deadline answers it).
//   - Only transactions committed from their first sending are observed:
//     the latency of one that was resubmitted says more about the outage
//     than about ordering, and would stretch the next deadline.
//   - When no orderer takes a resubmission (503 during an election, say) it
//     is tried again retryWait later, without counting; a transaction
//     watched for 4*ceil (twice the gateway's Timeout) is forgotten, taken
//     or not, so an ordering service that stays down costs a bounded
//     number of tries.
//   - The bytes kept are bounded by budget: past it, a transaction is
//     submitted but not watched.
type resubmit struct {
	factor      int
	floor, ceil time.Duration
	retryWait   time.Duration
	budget      int  // bytes of transactions kept
	off         bool // the floor reaches ceil: watch nothing (newResubmit)
	maxResubmit int
	txs         map[string]*watched
	bytes       int
	lat         latencyMax
}

// watched is one transaction the core waits to see committed.
type watched struct {
	raw      []byte
	first    time.Time // its first sending started
	sent     time.Time // its latest sending that an orderer admitted
	resent   int       // resubmissions an orderer admitted
	due      time.Time
	inFlight bool // its sending is under way: the first (add to admitted), or one due handed out (to resent)
}

// Defaults of the resubmission policy.
const (
	resubmitFactor    = 4
	resubmitFloor     = 500 * time.Millisecond
	resubmitRetryWait = 100 * time.Millisecond
	resubmitBudget    = 64 << 20
	maxResubmits      = 4
	latencyWindow     = time.Second
)

// newResubmit returns a core whose deadlines reach at most ceil (half the
// gateway's Timeout: a client's deadline leaves room for a resubmission).
// orderWait is how long an admitted transaction may wait for its block
// when nothing is lost (Config.OrderWait): no deadline is shorter than it
// plus the floor, since a transaction waiting in a block-mode cutter looks
// exactly like a lost one until its batch times out. When that leaves no
// room below ceil, the core watches nothing (off): any resubmission would
// duplicate transactions that are merely waiting.
func newResubmit(ceil, orderWait time.Duration) *resubmit {
	floor := resubmitFloor + orderWait
	return &resubmit{factor: resubmitFactor, floor: min(floor, ceil), ceil: ceil, off: floor >= ceil, retryWait: resubmitRetryWait,
		budget: resubmitBudget, maxResubmit: maxResubmits, txs: map[string]*watched{}}
}

// wait is how long after its n-th sending a transaction not yet committed
// is resubmitted.
func (r *resubmit) wait(n int, now time.Time) time.Duration {
	d := min(max(time.Duration(r.factor)*r.lat.get(now), r.floor), r.ceil)
	for range n {
		d = min(2*d, r.ceil)
	}
	return d
}

// add watches a transaction whose first sending starts at now, before an
// orderer admits it, so that a commit that comes before the admission's
// answer is not missed; it is not due until admitted says when it was
// admitted. False when the byte budget has no room for it (or it is
// watched already).
func (r *resubmit) add(id string, raw []byte, now time.Time) bool {
	if _, ok := r.txs[id]; ok || r.off || r.bytes+len(raw) > r.budget {
		return false
	}
	r.txs[id] = &watched{raw: raw, first: now, sent: now, inFlight: true}
	r.bytes += len(raw)
	return true
}

// admitted records that an orderer admitted the first sending of a
// watched transaction at now: it is due wait(0) later, which it returns.
// Ids not watched (committed already) are ignored: zero.
func (r *resubmit) admitted(id string, now time.Time) time.Time {
	w, ok := r.txs[id]
	if !ok || w.resent > 0 {
		return time.Time{}
	}
	w.inFlight, w.sent, w.due = false, now, now.Add(r.wait(0, now))
	return w.due
}

// committed forgets a transaction that committed at now (with any code),
// and observes its latency if it was never resubmitted. Ids not watched
// are ignored.
func (r *resubmit) committed(id string, now time.Time) {
	w, ok := r.txs[id]
	if !ok {
		return
	}
	if w.resent == 0 {
		r.lat.observe(now.Sub(w.sent), now)
	}
	r.forget(id, w)
}

func (r *resubmit) forget(id string, w *watched) {
	delete(r.txs, id)
	r.bytes -= len(w.raw)
}

// dueTx is a transaction to resubmit now.
type dueTx struct {
	id  string
	raw []byte
}

// due returns up to limit transactions to resubmit at now, the longest
// overdue first (then by id), marked in flight until resent answers for
// them, and the earliest time another is due (zero when none is waiting
// for a deadline). Transactions due again after maxResubmit
// resubmissions, or 4*ceil after their first sending, are forgotten.
func (r *resubmit) due(now time.Time, limit int) ([]dueTx, time.Time) {
	var ready []string
	var next time.Time
	for id, w := range r.txs {
		switch {
		case w.inFlight:
		case w.due.After(now):
			if next.IsZero() || w.due.Before(next) {
				next = w.due
			}
		case w.resent >= r.maxResubmit || now.Sub(w.first) >= 4*r.ceil:
			r.forget(id, w)
		default:
			ready = append(ready, id)
		}
	}
	slices.SortFunc(ready, func(a, b string) int {
		if c := r.txs[a].due.Compare(r.txs[b].due); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	if len(ready) > limit {
		next = now // the rest are due already
		ready = ready[:limit]
	}
	out := make([]dueTx, len(ready))
	for i, id := range ready {
		w := r.txs[id]
		w.inFlight = true
		out[i] = dueTx{id: id, raw: w.raw}
	}
	return out, next
}

// resent records the answer to a resubmission handed out by due: admitted
// (an orderer took it at now) or not (try again retryWait later). A
// transaction that committed meanwhile is no longer watched: ignored.
func (r *resubmit) resent(id string, admitted bool, now time.Time) {
	w, ok := r.txs[id]
	if !ok {
		return
	}
	w.inFlight = false
	if !admitted {
		w.due = now.Add(r.retryWait)
		return
	}
	w.resent++
	w.sent = now
	w.due = now.Add(r.wait(w.resent, now))
}

// latencyMax is the largest latency observed in the current window and the
// one before: a window with no observation (nothing committed during an
// outage) keeps the estimate of the last window that had one.
type latencyMax struct {
	start     time.Time
	cur, prev time.Duration
}

func (l *latencyMax) roll(now time.Time) {
	if now.Sub(l.start) < latencyWindow {
		return
	}
	if l.cur > 0 {
		l.prev = l.cur
	}
	l.cur, l.start = 0, now
}

func (l *latencyMax) observe(d time.Duration, now time.Time) {
	l.roll(now)
	l.cur = max(l.cur, d)
}

func (l *latencyMax) get(now time.Time) time.Duration {
	l.roll(now)
	return max(l.cur, l.prev)
}

// drop forgets a transaction an orderer refused for good.
func (r *resubmit) drop(id string) {
	if w, ok := r.txs[id]; ok {
		r.forget(id, w)
	}
}
