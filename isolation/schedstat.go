package isolation

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Scheduling delay. A node slowed by a neighbour is one whose threads are
// runnable but wait on a run queue while the neighbour's run; a node
// slowed by its client is idle. The kernel counts both halves per thread
// in /proc/PID/task/TID/schedstat: nanoseconds on a CPU, nanoseconds
// runnable but waiting, and time slices. Their ratio over a period, the
// wait per second of CPU, tells interference from a falling load, which
// a throughput threshold cannot (QiOi §3.1 profiles the same counters).

// Schedstat is a process's scheduler counters, summed over its threads.
type Schedstat struct {
	Run    time.Duration // on a CPU
	Wait   time.Duration // runnable, waiting on a run queue
	Slices uint64        // time slices run
}

// ReadSchedstat sums /proc/PID/task/*/schedstat. A thread that exits
// between the listing and the read is skipped; its counts leave the sum
// (Delay skips a process whose sums went down). The kernel keeps the
// counters only with schedstats or sched_info enabled, which every
// distribution kernel has.
func ReadSchedstat(pid int) (Schedstat, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return Schedstat{}, fmt.Errorf("isolation: scheduler counters of pid %d: %w", pid, err)
	}
	var s Schedstat
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue
		}
		if err != nil {
			return Schedstat{}, fmt.Errorf("isolation: scheduler counters of pid %d: %w", pid, err)
		}
		f := strings.Fields(string(b))
		if len(f) != 3 {
			return Schedstat{}, fmt.Errorf("isolation: %s holds %q, want three counters", filepath.Join(dir, t.Name(), "schedstat"), b)
		}
		var n [3]uint64
		for i := range n {
			if n[i], err = strconv.ParseUint(f[i], 10, 64); err != nil {
				return Schedstat{}, fmt.Errorf("isolation: %s holds %q, want three counters", filepath.Join(dir, t.Name(), "schedstat"), b)
			}
		}
		s.Run += time.Duration(n[0])
		s.Wait += time.Duration(n[1])
		s.Slices += n[2]
	}
	return s, nil
}

// MinDelayRun is the least CPU time the processes must have run over a
// period for Delay to measure it: a node that ran a few milliseconds
// (a metrics scrape, a timer) waits for one time slice of a neighbour
// and shows a large ratio that says nothing about its load.
const MinDelayRun = 10 * time.Millisecond

// Delay returns the run-queue wait per second of CPU of the processes
// present in both prev and cur (by PID), over the period between them,
// and false when they ran less than MinDelayRun in all (not measured).
// A process whose counters went down (a thread exited) is left out.
func Delay(prev, cur map[int]Schedstat) (float64, bool) {
	var run, wait time.Duration
	for pid, c := range cur {
		p, ok := prev[pid]
		if !ok || c.Run < p.Run || c.Wait < p.Wait {
			continue
		}
		run += c.Run - p.Run
		wait += c.Wait - p.Wait
	}
	if run < MinDelayRun {
		return 0, false
	}
	return wait.Seconds() / run.Seconds(), true
}
