package proccpu

import (
	"os"
	"testing"
	"time"
)

func TestProcess(t *testing.T) {
	before, err := Process(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self0, _ := Self()
	// Spin until getrusage says 150 ms of CPU went by (not wall time: on a
	// loaded machine the loop may get little of it).
	for {
		now, _ := Self()
		if now-self0 >= 150*time.Millisecond {
			break
		}
	}
	after, err := Process(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self1, _ := Self()
	self := self1 - self0
	if d := after - before; d < 150*time.Millisecond-2*ClockTick || d > self+2*ClockTick {
		t.Errorf("/proc says %v of CPU for a 150 ms busy loop, getrusage %v", d, self)
	}
	if _, err := Process(-1); err == nil {
		t.Error("Process(-1) succeeded")
	}
}

func TestParseStat(t *testing.T) {
	// A command name with a space and a parenthesis; utime 250, stime 30.
	stat := "4242 (strand (peer) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 30 0 0 20 0 12 0 100 0 0"
	got, err := ParseStat(4242, []byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := 280 * ClockTick; got != want {
		t.Errorf("ParseStat = %v, want %v", got, want)
	}
	for _, bad := range []string{"4242 no name", "4242 (x) S 1 2", "4242 (x) S 1 4242 4242 0 -1 0 0 0 0 0 z 30 0"} {
		if _, err := ParseStat(4242, []byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) succeeded", bad)
		}
	}
}
