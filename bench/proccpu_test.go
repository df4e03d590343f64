package bench

import (
	"os"
	"testing"
	"time"
)

func TestProcessCPU(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self0, _ := SelfCPU()
	// Spin until getrusage says 150 ms of CPU went by (not wall time: on a
	// loaded machine the loop may get little of it).
	for {
		now, _ := SelfCPU()
		if now-self0 >= 150*time.Millisecond {
			break
		}
	}
	after, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self1, _ := SelfCPU()
	self := self1 - self0
	if d := after - before; d < 150*time.Millisecond-2*clockTick || d > self+2*clockTick {
		t.Errorf("/proc says %v of CPU for a 150 ms busy loop, getrusage %v", d, self)
	}
	if _, err := ProcessCPU(-1); err == nil {
		t.Error("ProcessCPU(-1) succeeded")
	}
}
