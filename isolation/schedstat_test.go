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
	prev := map[int]Schedstat{1: {Run: 100 * ms, Wait: 50 * ms, Slices: 10}, 2: {Run: 10 * ms}, 3: {Run: 500 * ms, Wait: 500 * ms, Slices: 90}}
	cur := map[int]Schedstat{
		1: {Run: 300 * ms, Wait: 250 * ms, Slices: 50},  // waited 200 ms over 40 slices
		2: {Run: 110 * ms, Wait: 300 * ms, Slices: 60},  // waited 300 ms over 60 slices
		3: {Run: 400 * ms, Wait: 900 * ms, Slices: 100}, // run went down (a thread exited): left out
		4: {Run: time.Second, Wait: time.Second, Slices: 1000},
	}
	if d, ok := Delay(prev, cur); !ok || d != 5*ms {
		t.Fatalf("Delay = %v, %v; want 5ms (500 ms waited over 100 slices)", d, ok)
	}
	if _, ok := Delay(prev, map[int]Schedstat{1: {Run: time.Second, Wait: 90 * ms, Slices: 59}}); ok {
		t.Fatal("Delay measured 49 slices and 40 ms of wait, want not measured below MinDelaySlices and MinDelayWait")
	}
	// Starved: two slices in the period, each after a second's wait.
	if d, ok := Delay(prev, map[int]Schedstat{1: {Run: 110 * ms, Wait: 2050 * ms, Slices: 12}}); !ok || d != time.Second {
		t.Fatalf("starved: Delay = %v, %v; want 1s per slice, measured", d, ok)
	}
	if d, ok := Delay(prev, map[int]Schedstat{1: {Run: 100 * ms, Wait: 550 * ms, Slices: 10}}); !ok || d != 500*ms {
		t.Fatalf("waited 500 ms, ran no slice: Delay = %v, %v; want 500ms, measured", d, ok)
	}
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
	if !ok || d < time.Millisecond {
		t.Fatalf("%d busy processes on %d cores: Delay = %s, %v; want ≥ 1ms (each waits about one slice of another before each of its own)", n, runtime.NumCPU(), d, ok)
	}
	if _, err := ReadSchedstat(1 << 30); err == nil {
		t.Fatal("ReadSchedstat of a pid that cannot exist: no error")
	}
}
