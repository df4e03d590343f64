package gateway

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestResubmitScripts runs testdata/resubmit*.txt with
// github.com/cockroachdb/datadriven (go test -rewrite regenerates the
// expected output). A case is
//
//	run ceil=D orderwait=D budget=N max=N   (omitted fields take the defaults)
//	<command lines>
//	----
//	<one output line per command>
//
// Commands, at times after an arbitrary epoch:
//
//	add NAME:SIZE @T      the first sending of NAME (SIZE bytes) starts
//	admitted NAME @T      an orderer admitted that first sending
//	commit NAME @T        NAME committed on the peer
//	due [limit=N] @T      what is due (default limit 100)
//	resent NAME ok|no @T  the answer to a resubmission: admitted, or 503
//	drop NAME             an orderer refused NAME for good
//	wait N @T             the deadline after the N-th sending
//
// An output line echoes the command, then "=>" and its result, then
// "| watched NAMES (B bytes)" while transactions are watched.
func TestResubmitScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/resubmit*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/resubmit*.txt files (%v)", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				return runResubmit(t, d)
			})
		})
	}
}

var resubmitEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func runResubmit(t *testing.T, d *datadriven.TestData) string {
	t.Helper()
	if d.Cmd != "run" {
		d.Fatalf(t, "case starts with %q, want \"run key=value...\"", d.Cmd)
	}
	ceil, orderWait := 5*time.Second, time.Duration(0)
	for _, a := range d.CmdArgs {
		var err error
		switch a.Key {
		case "ceil":
			ceil, err = time.ParseDuration(a.Vals[0])
		case "orderwait":
			orderWait, err = time.ParseDuration(a.Vals[0])
		}
		if err != nil {
			d.Fatalf(t, "run %s=%s: %v", a.Key, a.Vals[0], err)
		}
	}
	r := newResubmit(ceil, orderWait)
	for _, a := range d.CmdArgs {
		v := a.Vals[0]
		var err error
		switch a.Key {
		case "ceil", "orderwait":
		case "budget":
			r.budget, err = strconv.Atoi(v)
		case "max":
			r.maxResubmit, err = strconv.Atoi(v)
		default:
			d.Fatalf(t, "unknown run field %q", a.Key)
		}
		if err != nil {
			d.Fatalf(t, "run %s=%s: %v", a.Key, v, err)
		}
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		var now time.Time
		if at := f[len(f)-1]; strings.HasPrefix(at, "@") {
			dur, err := time.ParseDuration(at[1:])
			if err != nil {
				d.Fatalf(t, "%s: time %q: %v", line, at, err)
			}
			now, f = resubmitEpoch.Add(dur), f[:len(f)-1]
		}
		res := "ok"
		switch f[0] {
		case "add":
			name, size, _ := strings.Cut(f[1], ":")
			n, err := strconv.Atoi(size)
			if err != nil {
				d.Fatalf(t, "%s: size %q: %v", line, size, err)
			}
			if !r.add(name, make([]byte, n), now) {
				res = "not watched"
			}
		case "admitted":
			if due := r.admitted(f[1], now); !due.IsZero() {
				res = fmt.Sprintf("due @%v", due.Sub(resubmitEpoch))
			}
		case "commit":
			r.committed(f[1], now)
		case "drop":
			r.drop(f[1])
		case "resent":
			r.resent(f[1], f[2] == "ok", now)
		case "wait":
			n, _ := strconv.Atoi(f[1])
			res = r.wait(n, now).String()
		case "due":
			limit := 100
			if len(f) > 1 {
				limit, _ = strconv.Atoi(strings.TrimPrefix(f[1], "limit="))
			}
			due, next := r.due(now, limit)
			names := make([]string, len(due))
			for i, tx := range due {
				names[i] = tx.id
			}
			slices.Sort(names)
			res = "[" + strings.Join(names, " ") + "]"
			if !next.IsZero() {
				res += fmt.Sprintf(" next @%v", next.Sub(resubmitEpoch))
			}
		default:
			d.Fatalf(t, "unknown command %q", line)
		}
		out = append(out, line+" => "+res+watchedString(r))
	}
	return strings.Join(out, "\n")
}

func watchedString(r *resubmit) string {
	if len(r.txs) == 0 {
		return ""
	}
	names := make([]string, 0, len(r.txs))
	for id := range r.txs {
		names = append(names, id)
	}
	slices.Sort(names)
	return fmt.Sprintf(" | watched %s (%d B)", strings.Join(names, " "), r.bytes)
}
