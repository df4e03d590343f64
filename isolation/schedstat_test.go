//go:build linux

package isolation

import (
	"fmt"
	"maps"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestDelayScripts runs testdata/delay.txt (go test -rewrite regenerates
// the expected output). A case is
//
//	delay [prev=DURATION] [cur=DURATION]
//	PID/TID COUNTERS -> COUNTERS      (one line per thread)
//	----
//	<output>
//
// where COUNTERS is "-" (the thread is absent from that reading) or
// "run=D wait=D slices=N [R]" (R: runnable when read). A PID whose every
// thread is absent from the previous reading is absent from it. The
// output gives each process's Waits and then Delay.
func TestDelayScripts(t *testing.T) {
	datadriven.RunTest(t, "testdata/delay.txt", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "delay" {
			d.Fatalf(t, "case starts with %q, want \"delay [prev=D] [cur=D]\"", d.Cmd)
		}
		var atPrev, atCur time.Time
		for _, a := range d.CmdArgs {
			var off time.Duration
			d.ScanArgs(t, a.Key, &off)
			switch a.Key {
			case "prev":
				atPrev = epoch.Add(off)
			case "cur":
				atCur = epoch.Add(off)
			default:
				d.Fatalf(t, "unknown argument %q", a.Key)
			}
		}
		prev, cur := map[int]Schedstat{}, map[int]Schedstat{}
		add := func(m map[int]Schedstat, at time.Time, pid, tid int, th ThreadSched) {
			s, ok := m[pid]
			if !ok {
				s = Schedstat{At: at, Threads: map[int]ThreadSched{}}
			}
			s.Threads[tid] = th
			s.Run, s.Wait, s.Slices = s.Run+th.Run, s.Wait+th.Wait, s.Slices+th.Slices
			m[pid] = s
		}
		for _, line := range strings.Split(d.Input, "\n") {
			id, rest, ok1 := strings.Cut(line, " ")
			before, after, ok2 := strings.Cut(rest, " -> ")
			ps, ts, ok3 := strings.Cut(id, "/")
			pid, err1 := strconv.Atoi(ps)
			tid, err2 := strconv.Atoi(ts)
			if !ok1 || !ok2 || !ok3 || err1 != nil || err2 != nil {
				d.Fatalf(t, "line %q, want \"PID/TID COUNTERS -> COUNTERS\"", line)
			}
			if th, ok := scriptThread(t, d, before); ok {
				add(prev, atPrev, pid, tid, th)
			}
			if th, ok := scriptThread(t, d, after); ok {
				add(cur, atCur, pid, tid, th)
			}
		}
		var out []string
		for _, pid := range slices.Sorted(maps.Keys(cur)) {
			p, ok := prev[pid]
			if !ok {
				out = append(out, fmt.Sprintf("pid %d: no previous reading", pid))
				continue
			}
			w, n := Waits(p, cur[pid])
			out = append(out, fmt.Sprintf("pid %d: waited %s over %d slices", pid, w, n))
		}
		if dl, ok := Delay(prev, cur); ok {
			out = append(out, fmt.Sprintf("delay %s per slice", dl))
		} else {
			out = append(out, fmt.Sprintf("delay not measured (fewer than %d slices and less than %s of wait)", MinDelaySlices, MinDelayWait))
		}
		return strings.Join(out, "\n")
	})
}

// scriptThread parses "-" or "run=D wait=D slices=N [R]".
func scriptThread(t *testing.T, d *datadriven.TestData, s string) (ThreadSched, bool) {
	t.Helper()
	s = strings.TrimSpace(s)
	if s == "-" {
		return ThreadSched{}, false
	}
	var th ThreadSched
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "run":
			th.Run, err = time.ParseDuration(v)
		case "wait":
			th.Wait, err = time.ParseDuration(v)
		case "slices":
			th.Slices, err = strconv.ParseUint(v, 10, 64)
		case "R":
			th.Runnable = true
		default:
			err = fmt.Errorf("unknown field")
		}
		if err != nil {
			d.Fatalf(t, "counters %q: field %q: %v", s, f, err)
		}
	}
	return th, true
}

// TestDelayReal reads the kernel's counters of real processes: with twice
// as many busy processes as cores, each waits on a run queue about as
// long as it runs, a scheduler slice of milliseconds before each slice
// (each gets at most half a core, whatever else the machine runs).
func TestDelayReal(t *testing.T) {
	n := 2 * runtime.NumCPU()
	var pids []int
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		pids = append(pids, c.Process.Pid)
	}
	read := func() map[int]Schedstat {
		out := map[int]Schedstat{}
		for _, p := range pids {
			s, err := ReadSchedstat(p, time.Now())
			if err != nil {
				t.Fatalf("ReadSchedstat(%d): %v", p, err)
			}
			out[p] = s
		}
		return out
	}
	prev := read()
	var cur map[int]Schedstat
	// Wait for a second of CPU in all, enough slices to average over.
	for {
		time.Sleep(100 * time.Millisecond)
		cur = read()
		var run time.Duration
		for p, c := range cur {
			run += c.Run - prev[p].Run
		}
		if run >= time.Second {
			break
		}
	}
	// n always-runnable processes on n/2 cores: each runs at most half
	// the time and waits the rest, so together they wait at least as long
	// as they run (other tenants only add to the wait). How long one
	// slice is depends on the scheduler, so the slice count is checked
	// only through Delay's arithmetic.
	var run, wait time.Duration
	var slices uint64
	for p, c := range cur {
		run += c.Run - prev[p].Run
		wait += c.Wait - prev[p].Wait
		slices += c.Slices - prev[p].Slices
	}
	if wait < run/2 {
		t.Fatalf("%d busy processes on %d cores ran %s and waited only %s; want a wait about as long as the run", n, runtime.NumCPU(), run, wait)
	}
	d, ok := Delay(prev, cur)
	if want := wait / time.Duration(slices); !ok || d != want {
		t.Fatalf("Delay = %s, %v; want %s (%s waited over %d slices)", d, ok, want, wait, slices)
	}
	if _, err := ReadSchedstat(1<<30, time.Now()); err == nil {
		t.Fatal("ReadSchedstat of a pid that cannot exist: no error")
	}
}
