package bench

import (
	"os"
	"testing"
	"time"
)

func TestReadProcSelf(t *testing.T) {
	s, err := ReadProc(0)
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS < 1<<20 || s.CPU < 0 {
		t.Fatalf("self: RSS %d bytes, CPU %v: want at least 1 MiB resident", s.RSS, s.CPU)
	}
	byPID, err := ReadProc(os.Getpid())
	if err != nil || byPID.RSS == 0 {
		t.Fatalf("by pid: %+v, %v", byPID, err)
	}
	if _, err := ReadProc(1 << 30); err == nil {
		t.Fatal("read a process that does not exist")
	}
	if _, _, err := NetBytes(0); err != nil {
		t.Fatal(err)
	}
}

func TestProcField(t *testing.T) {
	b := []byte("Name:\tstrand\nVmRSS:\t  123456 kB\nread_bytes: 42\nbad:\n")
	for _, tc := range []struct {
		name string
		want uint64
		ok   bool
	}{{"VmRSS:", 123456, true}, {"read_bytes:", 42, true}, {"bad:", 0, false}, {"missing:", 0, false}} {
		if got, ok := procField(b, tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("procField(%s) = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestWatcher(t *testing.T) {
	w := watch([]Proc{{Name: "self", PID: 0}, {Name: "gone", PID: 1 << 30}})
	end := time.Now().Add(1100 * time.Millisecond)
	for time.Now().Before(end) { // burn CPU so that the sample shows it
	}
	u := w.finish()
	if len(u.Procs) != 2 || u.Procs[0].CPUPercent < 10 || u.Procs[0].RSSMB <= 0 || len(u.Procs[0].CPUSeries) == 0 {
		t.Fatalf("self usage %+v", u.Procs[0])
	}
	if u.Procs[1].Err == "" {
		t.Fatalf("a missing process has no error: %+v", u.Procs[1])
	}
}
