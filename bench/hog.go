package bench

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/isolation"
)

// Hogs. A round's interference is N co-located CPU hogs, QiOi's sysbench
// containers: N processes, each in a cgroup of its own at the default
// weight, each spinning on one thread and counting its own work.
//
// The hog is strand itself (`strand bench hog`, HogMain) rather than
// sysbench or stress-ng: it needs nothing installed, so the presets run
// wherever strand builds, and the harness reads each hog's count exactly
// at the instants that bound the measured window (it asks over the hog's
// stdin), where stress-ng reports its bogo-ops only once, at exit, for its
// whole life, ramp-up included. A hog exits when its stdin closes, so a
// harness killed by SIGKILL leaves no hog spinning.

// hogUnit is the work one op does: SHA-256 of a 1 KiB buffer, chained, a
// CPU-bound step of under a microsecond that touches nothing beyond L1.
const hogUnit = 1024

// HogMain is the hog process: it spins on one thread, counting ops, and
// answers each line read from in with the ops done so far; it returns
// when in ends.
func HogMain(in io.Reader, out io.Writer) error {
	runtime.GOMAXPROCS(1)
	var ops atomic.Uint64
	go func() {
		var buf [hogUnit]byte
		for {
			sum := sha256.Sum256(buf[:])
			copy(buf[:], sum[:])
			ops.Add(1)
		}
	}()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if _, err := fmt.Fprintln(out, ops.Load()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// hogs are a round's running hog processes.
type hogs struct {
	procs []*hogProc
	act   *isolation.Actuator
}

type hogProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startHogs starts n hogs with command (the strand binary; "bench hog" is
// appended), each moved into a cgroup of its own (hog0, hog1, …) under
// parent, in a subtree of prefix "strand-hogs" beside the nodes'; with
// idle, the subtree is marked idle (cpu.idle, Interference.HogsIdle).
func startHogs(n int, command []string, parent string, idle bool) (_ *hogs, err error) {
	comps := make([]string, n)
	for i := range comps {
		comps[i] = fmt.Sprintf("hog%d", i)
	}
	act, err := isolation.Open(isolation.ActuatorOptions{Parent: parent, Prefix: "strand-hogs", Components: comps})
	if err != nil {
		return nil, fmt.Errorf("bench: hogs' cgroups: %w", err)
	}
	h := &hogs{act: act}
	defer func() {
		if err != nil {
			err = errors.Join(err, h.stop())
		}
	}()
	if idle {
		f := filepath.Join(act.Dir(), "cpu.idle")
		if err := os.WriteFile(f, []byte("1"), 0); err != nil {
			return h, fmt.Errorf("bench: hogs_idle: writing 1 to %s: %w", f, err)
		}
	}
	for i := range n {
		args := append(append([]string{}, command[1:]...), "bench", "hog")
		cmd := exec.Command(command[0], args...)
		in, err := cmd.StdinPipe()
		if err != nil {
			return h, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return h, err
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return h, fmt.Errorf("bench: starting hog %d (%s): %w", i, command[0], err)
		}
		h.procs = append(h.procs, &hogProc{cmd: cmd, in: in, out: bufio.NewReader(out)})
		if err := act.Move(comps[i], cmd.Process.Pid); err != nil {
			return h, fmt.Errorf("bench: hog %d: %w", i, err)
		}
	}
	return h, nil
}

// ops asks every hog for its count; the time returned is when the last
// answer came.
func (h *hogs) ops() ([]uint64, time.Time, error) {
	out := make([]uint64, len(h.procs))
	for i, p := range h.procs {
		if _, err := io.WriteString(p.in, "\n"); err != nil {
			return nil, time.Time{}, fmt.Errorf("bench: asking hog %d (pid %d) for its count: %w", i, p.cmd.Process.Pid, err)
		}
		line, err := p.out.ReadString('\n')
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("bench: reading hog %d's count (pid %d): %w", i, p.cmd.Process.Pid, err)
		}
		if out[i], err = strconv.ParseUint(strings.TrimSpace(line), 10, 64); err != nil {
			return nil, time.Time{}, fmt.Errorf("bench: hog %d answered %q, want a count", i, line)
		}
	}
	return out, time.Now(), nil
}

// stop ends the hogs (their stdin closes; a hog that lingers is killed)
// and removes their cgroups. It may be called again.
func (h *hogs) stop() error {
	for _, p := range h.procs {
		p.in.Close()
	}
	for _, p := range h.procs {
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-done
		}
	}
	h.procs = nil
	return h.act.Close()
}
