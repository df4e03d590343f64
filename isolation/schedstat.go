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
//
// The kernel adds a wait to the counter only when it ends, and not only
// when the thread then runs (sched_info_arrive, which also counts the
// slice) but also when a queued thread is taken off its run queue
// without running (sched_info_dequeue: the load balancer moving it to
// the other CPU), which counts no slice. Under starvation both matter:
// a 2-core machine measured 9 threads of a Go process at weight 2 beside
// 8 busy ones (testdata/delay.txt) gaining 24.4 s of wait and 2 slices in
// one 1 s period, one thread 2.99 s: waits that began periods earlier,
// ended by migrations. Summed per process and divided by the slices,
// that read 12.2 s per slice, the artifact docs/isolation.md saw (9.2 s,
// 1.7 s into a round). So Delay works per thread: a thread's wait in a
// period is at most the period, a thread that waited without running
// counts one slice, and a thread runnable at both readings that never ran
// between them waited the whole period (its wait, still under way, is
// not in the counter yet). The mean per slice is then never more than
// the period.

// ThreadSched is one thread's scheduler counters.
type ThreadSched struct {
	Run    time.Duration // on a CPU
	Wait   time.Duration // runnable, waiting on a run queue (ended waits only)
	Slices uint64        // time slices run
	// Runnable says the thread was running or on a run queue (state R)
	// when read.
	Runnable bool
}

// Schedstat is a process's scheduler counters, summed over its threads,
// with each thread's own.
type Schedstat struct {
	Run    time.Duration // on a CPU
	Wait   time.Duration // runnable, waiting on a run queue
	Slices uint64        // time slices run
	// At is when the counters were read; zero when unknown (then no
	// thread's wait is bounded by the period).
	At time.Time
	// Threads are the counters per thread id; nil means unknown, and
	// the sums stand for one thread.
	Threads map[int]ThreadSched
}

// ReadSchedstat reads /proc/PID/task/*/schedstat and each thread's state,
// at at. A thread that exits between the listing and the read is skipped;
// its counts leave the sum. The kernel keeps the counters only with
// schedstats or sched_info enabled, which every distribution kernel has.
func ReadSchedstat(pid int, at time.Time) (Schedstat, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return Schedstat{}, fmt.Errorf("isolation: scheduler counters of pid %d: %w", pid, err)
	}
	s := Schedstat{At: at, Threads: make(map[int]ThreadSched, len(tasks))}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		th, err := readThread(filepath.Join(dir, t.Name()))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue
		}
		if err != nil {
			return Schedstat{}, fmt.Errorf("isolation: scheduler counters of pid %d: %w", pid, err)
		}
		s.Threads[tid] = th
		s.Run += th.Run
		s.Wait += th.Wait
		s.Slices += th.Slices
	}
	return s, nil
}

// readThread reads one thread's schedstat and the state in its stat.
func readThread(dir string) (ThreadSched, error) {
	b, err := os.ReadFile(filepath.Join(dir, "schedstat"))
	if err != nil {
		return ThreadSched{}, err
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return ThreadSched{}, fmt.Errorf("%s holds %q, want three counters", filepath.Join(dir, "schedstat"), b)
	}
	var n [3]uint64
	for i := range n {
		if n[i], err = strconv.ParseUint(f[i], 10, 64); err != nil {
			return ThreadSched{}, fmt.Errorf("%s holds %q, want three counters", filepath.Join(dir, "schedstat"), b)
		}
	}
	st, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return ThreadSched{}, err
	}
	// "TID (COMM) S ...": COMM may hold spaces and parentheses, the
	// state follows the last ')'.
	i := strings.LastIndexByte(string(st), ')')
	if i < 0 || i+2 >= len(st) {
		return ThreadSched{}, fmt.Errorf("%s holds %.40q, want \"TID (COMM) STATE ...\"", filepath.Join(dir, "stat"), st)
	}
	return ThreadSched{Run: time.Duration(n[0]), Wait: time.Duration(n[1]), Slices: n[2], Runnable: st[i+2] == 'R'}, nil
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
// "scheduling delay", its Table 2), by Waits' per-thread rules. It is
// false when they ran fewer than MinDelaySlices slices and waited less
// than MinDelayWait in all (not measured).
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
		if !ok {
			continue
		}
		w, s := Waits(p, c)
		wait += w
		slices += s
	}
	if slices < MinDelaySlices && wait < MinDelayWait {
		return 0, false
	}
	return wait / time.Duration(max(slices, 1)), true
}

// Waits returns how long one process's threads waited on a run queue
// between its readings p and c, and over how many slices, thread by
// thread:
//
//   - a thread in c but not in p started in the period and counts from 0;
//   - a thread whose counters went down is left out (its id was reused);
//   - a thread runnable at both readings that neither ran nor ended a
//     wait between them waited the whole period, one slice;
//   - a thread's wait is at most the period (c.At − p.At, when both are
//     known): the part of a wait that began before p was the previous
//     period's, which did not see it yet;
//   - a thread whose wait grew with no slice run (it was moved between
//     run queues) counts one slice.
//
// Readings without Threads count their sums as one thread.
func Waits(p, c Schedstat) (time.Duration, uint64) {
	period := time.Duration(0)
	if !p.At.IsZero() && !c.At.IsZero() {
		period = c.At.Sub(p.At)
	}
	pt, ct := p.Threads, c.Threads
	if pt == nil || ct == nil {
		pt = map[int]ThreadSched{0: {Run: p.Run, Wait: p.Wait, Slices: p.Slices}}
		ct = map[int]ThreadSched{0: {Run: c.Run, Wait: c.Wait, Slices: c.Slices}}
	}
	var wait time.Duration
	var slices uint64
	for tid, ct := range ct {
		pt, seen := pt[tid]
		if ct.Run < pt.Run || ct.Wait < pt.Wait || ct.Slices < pt.Slices {
			continue
		}
		w, s := ct.Wait-pt.Wait, ct.Slices-pt.Slices
		if seen && pt.Runnable && ct.Runnable && w == 0 && s == 0 && ct.Run == pt.Run && period > 0 {
			w, s = period, 1
		}
		if period > 0 && w > period {
			w = period
		}
		if w > 0 && s == 0 {
			s = 1
		}
		wait += w
		slices += s
	}
	return wait, slices
}
