package tiered

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestPolicyScripts runs testdata/policy.txt with
// github.com/cockroachdb/datadriven (go test -rewrite regenerates the
// expected output). Commands:
//
//	decide KEY=VALUE...   the plan for a tier state: height, durable,
//	                      synced, bytes, bound, waiting, syncto (numbers),
//	                      since (the time since the last flush), closing;
//	                      the policy is blocks=4 interval=1s
//	victims used=N target=N
//	KEY BYTES TOUCHED     (one candidate a line)
//
// decide prints "idle", or "flush", "flush sync", with ", evict to N";
// victims prints the keys dropped, coldest first, or "none".
func TestPolicyScripts(t *testing.T) {
	datadriven.RunTest(t, "testdata/policy.txt", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "decide":
			return runDecide(t, d)
		case "victims":
			var used, target int64
			d.ScanArgs(t, "used", &used)
			d.ScanArgs(t, "target", &target)
			var cands []candidate
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				var c candidate
				if _, err := fmt.Sscan(line, &c.key, &c.bytes, &c.touched); err != nil {
					d.Fatalf(t, "candidate %q: %v, want KEY BYTES TOUCHED", line, err)
				}
				cands = append(cands, c)
			}
			if got := victims(cands, used, target); len(got) > 0 {
				return strings.Join(got, " ")
			}
			return "none"
		}
		d.Fatalf(t, "command %q, want decide or victims", d.Cmd)
		return ""
	})
}

func runDecide(t *testing.T, d *datadriven.TestData) string {
	p := flushPolicy{blocks: 4, interval: time.Second}
	now := time.Unix(1000, 0)
	s := tierState{lastFlush: now}
	for _, a := range d.CmdArgs {
		var n uint64
		if a.Key != "since" && a.Key != "closing" {
			d.ScanArgs(t, a.Key, &n)
		}
		switch a.Key {
		case "height":
			s.height = n
		case "durable":
			s.durable = n
		case "synced":
			s.synced = n
		case "bytes":
			s.bytes = int64(n)
		case "bound":
			s.bound = int64(n)
		case "waiting":
			s.waiting = int64(n)
		case "syncto":
			s.syncTo = n
		case "since":
			var since time.Duration
			d.ScanArgs(t, a.Key, &since)
			s.lastFlush = now.Add(-since)
		case "closing":
			s.closing = true
		default:
			d.Fatalf(t, "%q: unknown key", a.Key)
		}
	}
	pl := p.decide(s, now)
	out := "idle"
	switch {
	case pl.flush && pl.sync:
		out = "flush sync"
	case pl.flush:
		out = "flush"
	}
	if pl.evictTo >= 0 {
		out += fmt.Sprintf(", evict to %d", pl.evictTo)
	}
	return out
}

func TestDeadline(t *testing.T) {
	p := flushPolicy{interval: time.Second}
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		now, want time.Time
	}{
		{t0, t0.Add(time.Second)}, // within the interval: its end
		{t0.Add(999 * time.Millisecond), t0.Add(time.Second)},
		{t0.Add(time.Second), t0.Add(2 * time.Second)}, // passed: an interval from now, not now
		{t0.Add(time.Hour), t0.Add(time.Hour + time.Second)},
	} {
		if got := p.deadline(t0, tc.now); !got.Equal(tc.want) {
			t.Errorf("deadline(last flush t0, now t0+%v) = t0+%v, want t0+%v", tc.now.Sub(t0), got.Sub(t0), tc.want.Sub(t0))
		}
	}
}
