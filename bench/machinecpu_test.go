package bench

import (
	"math"
	"strings"
	"testing"
)

func TestParseMachineCPU(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	m, err := parseMachineCPU("cpu  100 5 20 300 10 1 4 60 7 0")
	if err != nil {
		t.Fatal(err)
	}
	want := MachineCPU{Busy: 100 + 5 + 20 + 1 + 4, Idle: 300, IOWait: 10, Steal: 60, Total: 130 + 300 + 10 + 60}
	if m != want {
		t.Fatalf("parsed %+v, want %+v (guest time is inside user)", m, want)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 3 4 5 6 7 x"} {
		if _, err := parseMachineCPU(bad); err == nil || !strings.Contains(err.Error(), "/proc/stat") {
			t.Errorf("parseMachineCPU(%q) = %v, want an error naming /proc/stat", bad, err)
		}
	}
}

func TestMachineShare(t *testing.T) {
	a := MachineCPU{Busy: 100, Idle: 100, IOWait: 0, Steal: 0, Total: 200}
	b := MachineCPU{Busy: 160, Idle: 120, IOWait: 10, Steal: 110, Total: 400}
	s := b.Since(a)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"busy", s.BusyPct, 30}, {"idle", s.IdlePct, 15}, {"steal", s.StealPct, 55}} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %.2f%%, want %.2f%%", c.name, c.got, c.want)
		}
	}
	if !s.Available || s.String() != "busy 30%, idle 15%, stolen by the hypervisor 55%" {
		t.Errorf("String() = %q", s)
	}
	if z := a.Since(a); z.Available {
		t.Errorf("an empty interval reported %v", z)
	}
	if m, err := ReadMachineCPU(); err == nil && m.Total == 0 {
		t.Errorf("ReadMachineCPU read no time at all: %+v", m)
	}
}
