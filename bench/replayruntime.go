package bench

import (
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/strand-ledger/strand/internal/proccpu"
)

// ReplayRuntime is where a replay process's CPU went, from the kernel
// (getrusage) and the Go runtime (runtime/metrics), over the timed
// replay. It exists to explain a change in CPU per transaction between
// replays of one chain, such as a paced replay's against a full-speed
// one: user against kernel time, the collector, the scavenger, page
// faults and context switches.
type ReplayRuntime struct {
	UserS float64 `json:"user_s"`
	SysS  float64 `json:"sys_s"`
	// MinorFaults are page faults served without I/O: mostly heap pages
	// touched again after the scavenger returned them to the kernel.
	MinorFaults int64 `json:"minor_faults"`
	// VolSwitches are the times a thread gave up the CPU (a futex
	// sleep, an fsync); InvolSwitches, the times it was preempted.
	VolSwitches   int64  `json:"voluntary_switches"`
	InvolSwitches int64  `json:"involuntary_switches"`
	GCCycles      uint64 `json:"gc_cycles"`
	// GCS is the collector's CPU, the runtime's estimate; GCIdleS the
	// part its idle-priority mark workers ran on otherwise idle Ps.
	GCS     float64 `json:"gc_s"`
	GCIdleS float64 `json:"gc_idle_s"`
	// ScavengeS is the runtime's estimate of returning memory to the
	// kernel.
	ScavengeS         float64 `json:"scavenge_s"`
	GoroutinesCreated uint64  `json:"goroutines_created"`
	// OthersCPUS is the CPU everything else on the machine used
	// meanwhile (/proc/stat's busy time less this process's): other
	// tenants, the kernel's threads, the benchmark's parent. StealS is
	// the hypervisor's steal over all cores. Both 0 where /proc/stat
	// could not be read.
	OthersCPUS float64 `json:"others_cpu_s"`
	StealS     float64 `json:"steal_s"`
	// RunDelayS is the time the process's threads were runnable but
	// waiting for a CPU (the second field of /proc/self/task/*/schedstat,
	// summed): the peer's threads queued behind one another, behind
	// other tenants, or, on a virtual machine, behind a halted vCPU's
	// wake-up. At low rate, where each hand-off between the peer's
	// goroutines wakes a thread, it grows with no CPU to show for it,
	// and the part inside busy periods is charged as idle cores. 0 where
	// schedstat cannot be read (a kernel without schedstats).
	RunDelayS float64 `json:"run_delay_s"`
}

// readRunDelay sums the run-queue wait of this process's threads, in
// nanoseconds, from /proc/self/task/*/schedstat ("run_ns wait_ns
// slices"); threads gone since are not counted, and the Go runtime keeps
// its threads.
func readRunDelay() (int64, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, t := range tasks {
		raw, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		d, err := parseSchedstat(string(raw))
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// parseSchedstat returns the wait field of a schedstat line.
func parseSchedstat(line string) (int64, error) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return 0, fmt.Errorf("bench: schedstat %q: want run, wait and slices", line)
	}
	return strconv.ParseInt(f[1], 10, 64)
}

// runtimeSample is a point reading of what ReplayRuntime differences.
type runtimeSample struct {
	ru      syscall.Rusage
	metrics []metrics.Sample
	machine MachineCPU
	mErr    error
	delay   int64 // readRunDelay's, ns
	dErr    error
}

var runtimeMetricNames = []string{
	"/gc/cycles/total:gc-cycles",
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/gc/mark/idle:cpu-seconds",
	"/cpu/classes/scavenge/total:cpu-seconds",
	"/sched/goroutines-created:goroutines",
}

// readRuntime reads a point of the replay's window. Its own /proc reads
// cost CPU (a file per thread), so the getrusage reading that bounds the
// window is taken on the window's inside: last at its start, first at its
// end. The replay's CPU is that same reading's difference (cpu), so the
// breakdown's user and system time add up to it exactly.
func readRuntime(end bool) (runtimeSample, error) {
	s := runtimeSample{metrics: make([]metrics.Sample, len(runtimeMetricNames))}
	if end {
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &s.ru); err != nil {
			return s, fmt.Errorf("bench: getrusage: %w", err)
		}
	}
	for i, n := range runtimeMetricNames {
		s.metrics[i].Name = n
	}
	metrics.Read(s.metrics)
	s.machine, s.mErr = ReadMachineCPU()
	s.delay, s.dErr = readRunDelay()
	if !end {
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &s.ru); err != nil {
			return s, fmt.Errorf("bench: getrusage: %w", err)
		}
	}
	return s, nil
}

// cpu is the process's user and system time at the sample.
func (s runtimeSample) cpu() time.Duration {
	return time.Duration(s.ru.Utime.Nano() + s.ru.Stime.Nano())
}

// metric returns sample i as a float; a metric this Go does not know
// reads 0.
func (s runtimeSample) metric(i int) float64 {
	switch v := s.metrics[i].Value; v.Kind() {
	case metrics.KindUint64:
		return float64(v.Uint64())
	case metrics.KindFloat64:
		return v.Float64()
	}
	return 0
}

// since is what the process did between a and s.
func (s runtimeSample) since(a runtimeSample) *ReplayRuntime {
	d := func(i int) float64 { return s.metric(i) - a.metric(i) }
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	rt := &ReplayRuntime{
		UserS:         (tv(s.ru.Utime) - tv(a.ru.Utime)).Seconds(),
		SysS:          (tv(s.ru.Stime) - tv(a.ru.Stime)).Seconds(),
		MinorFaults:   s.ru.Minflt - a.ru.Minflt,
		VolSwitches:   s.ru.Nvcsw - a.ru.Nvcsw,
		InvolSwitches: s.ru.Nivcsw - a.ru.Nivcsw,
		GCCycles:      uint64(d(0)),
		GCS:           d(1), GCIdleS: d(2), ScavengeS: d(3),
		GoroutinesCreated: uint64(d(4)),
	}
	if s.dErr == nil && a.dErr == nil && s.delay > a.delay {
		rt.RunDelayS = time.Duration(s.delay - a.delay).Seconds()
	}
	if s.mErr == nil && a.mErr == nil && s.machine.Total > a.machine.Total {
		tick := proccpu.ClockTick.Seconds()
		rt.OthersCPUS = max(0, float64(s.machine.Busy-a.machine.Busy)*tick-rt.UserS-rt.SysS)
		rt.StealS = float64(s.machine.Steal-a.machine.Steal) * tick
	}
	return rt
}

// startReplayProfile profiles the timed replay into path; "" profiles
// nothing.
func startReplayProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: replay CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: replay CPU profile %s: %w", path, err)
	}
	return func() error { pprof.StopCPUProfile(); return f.Close() }, nil
}

// startReplayTrace writes a Go execution trace of the timed replay into
// path; "" traces nothing.
func startReplayTrace(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: replay trace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: replay trace %s: %w", path, err)
	}
	return func() error { trace.Stop(); return f.Close() }, nil
}
