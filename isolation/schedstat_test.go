//go:build linux

package isolation

import (
	"os/exec"
	"runtime"
	"testing"
	"time"
)

func TestDelayArithmetic(t *testing.T) {
	ms := time.Millisecond
	prev := map[int]Schedstat{1: {Run: 100 * ms, Wait: 50 * ms}, 2: {Run: 10 * ms, Wait: 0}, 3: {Run: 500 * ms, Wait: 500 * ms}}
	cur := map[int]Schedstat{
		1: {Run: 300 * ms, Wait: 250 * ms}, // ran 200 ms, waited 200 ms
		2: {Run: 110 * ms, Wait: 300 * ms}, // ran 100 ms, waited 300 ms
		3: {Run: 400 * ms, Wait: 900 * ms}, // went down (a thread exited): left out
		4: {Run: time.Second, Wait: time.Second},
	}
	if d, ok := Delay(prev, cur); !ok || d != 500.0/300 {
		t.Fatalf("Delay = %v, %v; want %v (500 ms waited over 300 ms run)", d, ok, 500.0/300)
	}
	if _, ok := Delay(prev, map[int]Schedstat{1: {Run: 105 * ms, Wait: time.Second}}); ok {
		t.Fatal("Delay measured 5 ms of run time, want not measured below MinDelayRun")
	}
}

// TestDelayReal reads the kernel's counters of real processes: twice as
// many busy processes as cores wait on a run queue at least as long as
// they run (each gets at most half a core), whatever else the machine runs.
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
			s, err := ReadSchedstat(p)
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
	d, ok := Delay(prev, cur)
	if !ok || d < 0.8 {
		t.Fatalf("%d busy processes on %d cores: Delay = %.3f, %v; want ≥ 0.8 (each waits about as long as it runs)", n, runtime.NumCPU(), d, ok)
	}
	if _, err := ReadSchedstat(1 << 30); err == nil {
		t.Fatal("ReadSchedstat of a pid that cannot exist: no error")
	}
}
