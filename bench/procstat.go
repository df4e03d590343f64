package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strand-ledger/strand/internal/proccpu"
)

// ProcSample is one reading of a process's counters from /proc.
type ProcSample struct {
	CPU        time.Duration
	RSS        uint64 // bytes resident now
	ReadBytes  uint64 // storage bytes read so far (/proc/PID/io), 0 where unreadable
	WriteBytes uint64 // storage bytes written so far
	IOKnown    bool   // /proc/PID/io was readable
}

func procDir(pid int) string {
	if pid == 0 {
		return "/proc/self"
	}
	return fmt.Sprintf("/proc/%d", pid)
}

// ReadProc reads process pid's CPU time, resident memory and storage I/O;
// pid 0 is this process. CPU and RSS are required; I/O counters are read
// where the kernel allows it.
func ReadProc(pid int) (ProcSample, error) {
	var s ProcSample
	var err error
	if pid == 0 {
		s.CPU, err = proccpu.Self()
	} else {
		s.CPU, err = proccpu.Process(pid)
	}
	if err != nil {
		return s, err
	}
	status, err := os.ReadFile(procDir(pid) + "/status")
	if err != nil {
		return s, fmt.Errorf("bench: memory of process %d: %w", pid, err)
	}
	if kb, ok := procField(status, "VmRSS:"); ok {
		s.RSS = kb * 1024
	}
	if io, err := os.ReadFile(procDir(pid) + "/io"); err == nil {
		r, ok1 := procField(io, "read_bytes:")
		w, ok2 := procField(io, "write_bytes:")
		s.ReadBytes, s.WriteBytes, s.IOKnown = r, w, ok1 && ok2
	}
	return s, nil
}

// procField returns the number after name in a /proc key-value file.
func procField(b []byte, name string) (uint64, bool) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte(name)); ok {
			f := strings.Fields(string(rest))
			if len(f) == 0 {
				return 0, false
			}
			n, err := strconv.ParseUint(f[0], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// NetBytes returns the bytes received and sent on every interface of the
// network namespace of process pid (/proc/PID/net/dev): the kernel keeps
// these per namespace, not per process.
func NetBytes(pid int) (rx, tx uint64, err error) {
	f, err := os.Open(procDir(pid) + "/net/dev")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.Contains(name, "|") {
			continue // the two header lines
		}
		fs := strings.Fields(rest)
		if len(fs) < 9 {
			continue
		}
		r, _ := strconv.ParseUint(fs[0], 10, 64)
		t, _ := strconv.ParseUint(fs[8], 10, 64)
		rx, tx = rx+r, tx+t
	}
	return rx, tx, sc.Err()
}

// Proc names a process to watch; PID 0 is this process.
type Proc struct {
	Name string
	PID  int
}

// ProcUsage is what one process used during a round.
type ProcUsage struct {
	Name        string    `json:"name"`
	CPUPercent  float64   `json:"cpu_percent"` // of one core, averaged over the round
	RSSMB       float64   `json:"rss_mb"`      // highest sampled
	DiskReadMB  float64   `json:"disk_read_mb"`
	DiskWriteMB float64   `json:"disk_write_mb"`
	IOKnown     bool      `json:"io_known"`
	CPUSeries   []float64 `json:"cpu_series"` // per second, % of one core
	RSSSeries   []float64 `json:"rss_series"` // per second, MiB
	Err         string    `json:"error,omitempty"`
}

// Usage is the resources of a round's processes.
type Usage struct {
	Procs     []ProcUsage `json:"processes"`
	NetRxMB   float64     `json:"net_rx_mb"` // the namespace's, all interfaces (loopback included)
	NetTxMB   float64     `json:"net_tx_mb"`
	Cores     int         `json:"cores"`
	Saturated bool        `json:"load_generator_saturated"`
	// Machine is how the whole machine's cores spent the round, the
	// hypervisor's steal included.
	Machine MachineShare `json:"machine"`
}

// watcher samples processes once a second. mu guards the samples.
type watcher struct {
	procs      []Proc
	start      []ProcSample
	startRx    uint64
	startTx    uint64
	t0         time.Time
	machine    machineSpan
	stop, done chan struct{}
	mu         struct {
		sync.Mutex
		last   []ProcSample
		lastAt time.Time
		usage  []ProcUsage
	}
}

func watch(procs []Proc) *watcher {
	w := &watcher{procs: procs, start: make([]ProcSample, len(procs)), stop: make(chan struct{}), done: make(chan struct{}), t0: time.Now()}
	w.mu.usage = make([]ProcUsage, len(procs))
	for i, p := range procs {
		w.mu.usage[i].Name = p.Name
		s, err := ReadProc(p.PID)
		if err != nil {
			w.mu.usage[i].Err = err.Error()
		}
		w.start[i] = s
	}
	w.mu.last, w.mu.lastAt = append([]ProcSample(nil), w.start...), w.t0
	w.startRx, w.startTx, _ = NetBytes(0)
	w.machine = startMachineSpan()
	go w.loop()
	return w
}

func (w *watcher) loop() {
	defer close(w.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.sample()
		}
	}
}

func (w *watcher) sample() {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	dt := now.Sub(w.mu.lastAt).Seconds()
	for i, p := range w.procs {
		s, err := ReadProc(p.PID)
		if err != nil {
			continue
		}
		u := &w.mu.usage[i]
		u.CPUSeries = append(u.CPUSeries, 100*(s.CPU-w.mu.last[i].CPU).Seconds()/dt)
		u.RSSSeries = append(u.RSSSeries, float64(s.RSS)/(1<<20))
		w.mu.last[i] = s
	}
	w.mu.lastAt = now
}

// finish stops sampling and returns the usage over the whole watch.
func (w *watcher) finish() Usage {
	close(w.stop)
	<-w.done
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	el := w.mu.lastAt.Sub(w.t0).Seconds()
	u := Usage{Cores: runtime.NumCPU(), Machine: w.machine.done()}
	for i := range w.procs {
		pu := w.mu.usage[i]
		end, start := w.mu.last[i], w.start[i]
		if pu.Err == "" && el > 0 {
			pu.CPUPercent = 100 * (end.CPU - start.CPU).Seconds() / el
			for _, r := range pu.RSSSeries {
				pu.RSSMB = max(pu.RSSMB, r)
			}
			pu.IOKnown = end.IOKnown
			pu.DiskReadMB = float64(end.ReadBytes-start.ReadBytes) / (1 << 20)
			pu.DiskWriteMB = float64(end.WriteBytes-start.WriteBytes) / (1 << 20)
		}
		u.Procs = append(u.Procs, pu)
	}
	if rx, tx, err := NetBytes(0); err == nil {
		u.NetRxMB, u.NetTxMB = float64(rx-w.startRx)/(1<<20), float64(tx-w.startTx)/(1<<20)
	}
	return u
}
