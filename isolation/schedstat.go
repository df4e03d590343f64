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
// runnable but waiting, and time slices. The mean wait per slice over a
// period tells interference from a falling load, which a throughput
// threshold cannot (QiOi §3.1 profiles the same counters).

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

// A period measures the delay when the processes ran at least
// MinDelaySlices time slices or waited at least MinDelayWait in all: a
// handful of short waits (a metrics scrape, a timer) is no load and says
// nothing about interference, but a node starved outright runs few slices
// and waits long for each (the qioi preset saw 2 s per slice), and that
// must not read as no load.
const (
	MinDelaySlices = 50
	MinDelayWait   = 100 * time.Millisecond
)

// Delay returns the mean run-queue wait per time slice of the processes
// present in both prev and cur (by PID), over the period between them:
// how long, on average, a thread made runnable waited for a CPU (QiOi's
// "scheduling delay", its Table 2). It is false when they ran fewer than
// MinDelaySlices slices and waited less than MinDelayWait in all (not
// measured); waiting with no slice run counts as one slice. A process
// whose counters went down (a thread exited) is left out.
//
// Why per slice and not per second of CPU: on a machine whose cores the
// nodes and their clients already oversubscribe, a Go node's threads
// wake together and queue behind each other, so the wait per CPU-second
// is high with no neighbour at all (1 to 3 s/s for Smallbank on 2 cores,
// at 100 tps as at saturation), while the wait per slice grows with the
// neighbours' slices (docs/isolation.md has the figures).
func Delay(prev, cur map[int]Schedstat) (time.Duration, bool) {
	var wait time.Duration
	var slices uint64
	for pid, c := range cur {
		p, ok := prev[pid]
		if !ok || c.Run < p.Run || c.Wait < p.Wait || c.Slices < p.Slices {
			continue
		}
		wait += c.Wait - p.Wait
		slices += c.Slices - p.Slices
	}
	if slices < MinDelaySlices && wait < MinDelayWait {
		return 0, false
	}
	return wait / time.Duration(max(slices, 1)), true
}
