package cut

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestFlowScripts runs the scripts in testdata/flow*.txt (go test -rewrite
// regenerates the expected output). A case is
//
//	run mode=M maxtxs=N maxbytes=N timeout=D maxhold=D pacing height=N   (all optional)
//	<command lines>
//	----
//	<one output line per command>
//
// Commands:
//
//	add NAME:SIZE... @T        Add transactions (tx id = NAME) at T
//	config NAME:SIZE @T        Add a config update at T
//	tick @T                    Tick at T
//	idle STORED @T             Idle at T with STORED blocks in the store
//	report PEER HEIGHT @T [CH] the pacer hears PEER's height on channel CH
//	                           (default c0, the Flow's) at T
//	cut CH HEIGHT              another channel of the pacer has cut HEIGHT blocks
//	behind CH HEIGHT @T        print the pacer's Behind for another channel
//	flush                      Flush
//	deadline                   print Deadline
//
// An output line echoes the command, then "=>" and the batches cut (by tx
// id; a config update as config[NAME]), the pacing events, and
// "| pending N" and "| holding" when they apply.
func TestFlowScripts(t *testing.T) { runScriptFiles(t, "testdata/flow*.txt", runFlow) }

func runFlow(t *testing.T, d *datadriven.TestData) []string {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		d.Fatalf(t, format, args...)
	}
	if d.Cmd != "run" {
		fail("case starts with %q, want \"run key=value...\"", d.Cmd)
	}
	var cfg Config
	var maxHold time.Duration
	var height uint64
	var pacer *Pacer
	for _, a := range d.CmdArgs {
		switch {
		case scanConfig(t, d, a, &cfg):
		case a.Key == "maxhold":
			d.ScanArgs(t, a.Key, &maxHold)
		case a.Key == "pacing":
			pacer = &Pacer{}
		case a.Key == "height":
			d.ScanArgs(t, a.Key, &height)
		default:
			fail("%q: unknown key, want mode, maxtxs, maxbytes, timeout, maxhold, pacing or height", a.String())
		}
	}
	f := NewFlow(cfg, &Pacing{Pacer: pacer, Channel: "c0", Height: height, MaxHold: maxHold})
	at := func(s string) time.Time { return scriptTime(t, d, s) }

	var out []string
	for _, cmd := range strings.Split(d.Input, "\n") {
		w := strings.Fields(cmd)
		var cuts []Batch
		var ev Pace
		res := ""
		switch {
		case len(w) >= 3 && w[0] == "add":
			now := at(w[len(w)-1])
			for _, tx := range w[1 : len(w)-1] {
				cuts = append(cuts, f.Add(scriptTx(t, tx), scriptName(tx), false, now)...)
			}
		case len(w) == 3 && w[0] == "config":
			cuts = f.Add(scriptTx(t, w[1]), scriptName(w[1]), true, at(w[2]))
		case len(w) == 2 && w[0] == "tick":
			cuts = f.Tick(at(w[1]))
		case len(w) == 3 && w[0] == "idle":
			stored, err := strconv.ParseUint(w[1], 10, 64)
			if err != nil {
				fail("idle %q: want a block count", w[1])
			}
			cuts, ev = f.Idle(at(w[2]), stored)
		case (len(w) == 4 || len(w) == 5) && w[0] == "report":
			h, err := strconv.ParseUint(w[2], 10, 64)
			if err != nil || pacer == nil {
				fail("report %q: want a height, and pacing on the run line", w[2])
			}
			ch := "c0"
			if len(w) == 5 {
				ch = w[4]
			}
			pacer.Report(w[1], ch, h, at(w[3]))
			res = "ok"
		case len(w) == 4 && w[0] == "behind":
			h, err := strconv.ParseUint(w[2], 10, 64)
			if err != nil || pacer == nil {
				fail("behind %q: want a height, and pacing on the run line", w[2])
			}
			res = fmt.Sprint(pacer.Behind(w[1], h, at(w[3])))
		case len(w) == 3 && w[0] == "cut":
			h, err := strconv.ParseUint(w[2], 10, 64)
			if err != nil || pacer == nil {
				fail("cut %q: want a height, and pacing on the run line", w[2])
			}
			pacer.Cut(w[1], h)
			res = "ok"
		case len(w) == 1 && w[0] == "flush":
			cuts = f.Flush()
		case len(w) == 1 && w[0] == "deadline":
			res = "none"
			if dl, ok := f.Deadline(); ok {
				res = "@" + dl.Sub(scriptEpoch).String()
			}
		default:
			fail("bad command %q", cmd)
		}
		if res == "" {
			res = renderFlow(t, cuts, ev)
		}
		line := cmd + " => " + res
		if n, _ := f.Pending(); n > 0 {
			line += fmt.Sprintf(" | pending %d", n)
		}
		if f.Holding() {
			line += " | holding"
		}
		out = append(out, line)
	}
	return out
}

func scriptName(spec string) string { name, _, _ := strings.Cut(spec, ":"); return name }

// renderFlow prints batches by their tx ids, checking that each id belongs
// to the transaction beside it.
func renderFlow(t *testing.T, cuts []Batch, ev Pace) string {
	var parts []string
	for _, b := range cuts {
		if got := names(b.Txs); !slices.Equal(got, b.IDs) {
			t.Fatalf("batch txs %v carry ids %v", got, b.IDs)
		}
		s := "[" + strings.Join(b.IDs, " ") + "]"
		if b.Config {
			s = "config" + s
		}
		parts = append(parts, s)
	}
	if ev&PaceHeld != 0 {
		parts = append(parts, "held")
	}
	if ev&PaceLimit != 0 {
		parts = append(parts, "hold-limit")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
