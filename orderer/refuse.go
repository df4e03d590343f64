package orderer

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// refusal is why the Cluster service, or catch-up, refused what another
// node sent. Each kind has its own counter (RaftMetrics.RefusedBy) and
// its own log budget (rateLog).
type refusal int

const (
	// refuseNotMember: the caller's TLS certificate is not an orderer of
	// the channel that is a member of this Raft cluster.
	refuseNotMember refusal = iota
	// refuseWrongSender: a Raft message whose From is not the
	// authenticated member, or whose To is not this node.
	refuseWrongSender
	// refuseMalformed: bytes that do not decode (a Raft message, a
	// forwarded transaction).
	refuseMalformed
	// refuseBadBlock: a block fetched in catch-up that is not the next
	// block, does not link to the stored chain, does not match its data
	// hash, or is not signed by an orderer of the channel.
	refuseBadBlock
	nRefusals
)

var refusalNames = [nRefusals]string{"not_member", "wrong_sender", "malformed", "bad_block"}

func (r refusal) String() string { return refusalNames[r] }

// rateLog lets a few lines of each kind through and then at most one
// per interval, so a flood of bad input cannot fill the disk; the next
// line that passes says how many were suppressed since the last one.
//
// It is a token bucket per kind: burst lines at once, refilled at one per
// every. The clock is an input (now) so tests can drive it.
type rateLog struct {
	every time.Duration
	burst float64
	now   func() time.Time
	mu    struct {
		sync.Mutex
		kinds map[string]*logBucket
	}
}

type logBucket struct {
	tokens     float64
	last       time.Time
	suppressed uint64
}

// Log budget of each refusal kind: 10 lines at once, then one a second.
const (
	refusalLogBurst = 10
	refusalLogEvery = time.Second
)

func newRateLog(burst int, every time.Duration, now func() time.Time) *rateLog {
	l := &rateLog{every: every, burst: float64(burst), now: now}
	l.mu.kinds = map[string]*logBucket{}
	return l
}

// allow reports whether a line of kind may be logged now and, if so, how
// many lines of that kind were suppressed before it.
func (l *rateLog) allow(kind string) (ok bool, suppressed uint64) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.mu.kinds[kind]
	if b == nil {
		b = &logBucket{tokens: l.burst, last: now}
		l.mu.kinds[kind] = b
	}
	b.tokens = min(l.burst, b.tokens+float64(now.Sub(b.last))/float64(l.every))
	b.last = now
	if b.tokens < 1 {
		b.suppressed++
		return false, 0
	}
	b.tokens--
	suppressed, b.suppressed = b.suppressed, 0
	return true, suppressed
}

// warn logs msg at warn level if kind's budget allows, adding the number
// of suppressed lines when there were any.
func (l *rateLog) warn(log *slog.Logger, kind, msg string, args ...any) {
	l.log(log, slog.LevelWarn, kind, msg, args...)
}

// log logs msg at level if kind's budget allows (see warn).
func (l *rateLog) log(log *slog.Logger, level slog.Level, kind, msg string, args ...any) {
	ok, suppressed := l.allow(kind)
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed_since_last", suppressed)
	}
	log.Log(context.Background(), level, msg, args...)
}
