package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MachineCPU is one reading of the whole machine's CPU time by state, in
// clock ticks summed over all cores (/proc/stat's "cpu" line).
type MachineCPU struct {
	Busy   uint64 // user, nice, system, irq, softirq
	Idle   uint64
	IOWait uint64
	Steal  uint64 // time the hypervisor ran something else while this machine wanted a core
	Total  uint64
}

// ReadMachineCPU reads /proc/stat.
func ReadMachineCPU() (MachineCPU, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return MachineCPU{}, fmt.Errorf("bench: machine CPU: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return MachineCPU{}, fmt.Errorf("bench: machine CPU: /proc/stat is empty")
	}
	return parseMachineCPU(sc.Text())
}

// parseMachineCPU parses the "cpu" line of /proc/stat: user nice system
// idle iowait irq softirq steal [guest guest_nice]. Guest time is already
// counted in user and nice, so it is not added again.
func parseMachineCPU(line string) (MachineCPU, error) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return MachineCPU{}, fmt.Errorf("bench: machine CPU: /proc/stat begins %q, want \"cpu\" and 8 counters", line)
	}
	var v [8]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return MachineCPU{}, fmt.Errorf("bench: machine CPU: counter %d of /proc/stat's cpu line is %q: %w", i+1, f[i+1], err)
		}
		v[i] = n
	}
	m := MachineCPU{Busy: v[0] + v[1] + v[2] + v[5] + v[6], Idle: v[3], IOWait: v[4], Steal: v[7]}
	m.Total = m.Busy + m.Idle + m.IOWait + m.Steal
	return m, nil
}

// MachineShare is how the machine's cores spent an interval, in percent of
// all their time. On a shared virtual machine Steal is the capacity the
// hypervisor gave to others: figures measured at different moments
// compare only where their Steal is alike.
type MachineShare struct {
	BusyPct   float64 `json:"busy_pct"`
	IdlePct   float64 `json:"idle_pct"` // idle and waiting for I/O
	StealPct  float64 `json:"steal_pct"`
	Available bool    `json:"available"` // false where /proc/stat could not be read
}

// Since returns how the cores spent the time from earlier to m.
func (m MachineCPU) Since(earlier MachineCPU) MachineShare {
	d := float64(m.Total - earlier.Total)
	if m.Total <= earlier.Total {
		return MachineShare{}
	}
	pct := func(a, b uint64) float64 { return 100 * float64(a-b) / d }
	return MachineShare{
		BusyPct:   pct(m.Busy, earlier.Busy),
		IdlePct:   pct(m.Idle+m.IOWait, earlier.Idle+earlier.IOWait),
		StealPct:  pct(m.Steal, earlier.Steal),
		Available: true,
	}
}

// String reads like "busy 71%, idle 12%, stolen 17%".
func (s MachineShare) String() string {
	if !s.Available {
		return "machine CPU n/a"
	}
	return fmt.Sprintf("busy %.0f%%, idle %.0f%%, stolen by the hypervisor %.0f%%", s.BusyPct, s.IdlePct, s.StealPct)
}

// machineSpan measures a MachineShare from its creation to done; on a
// machine without /proc/stat it reports an unavailable share.
type machineSpan struct {
	start MachineCPU
	err   error
}

func startMachineSpan() machineSpan {
	m, err := ReadMachineCPU()
	return machineSpan{start: m, err: err}
}

func (s machineSpan) done() MachineShare {
	if s.err != nil {
		return MachineShare{}
	}
	m, err := ReadMachineCPU()
	if err != nil {
		return MachineShare{}
	}
	return m.Since(s.start)
}
