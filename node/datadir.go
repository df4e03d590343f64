package node

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrDataDirInUse marks a data directory another process holds: the
// node (or a tool reading its ledger) is already running.
var ErrDataDirInUse = errors.New("node: data directory in use")

// pidFile is the file in a data directory that a running node holds an
// exclusive flock on and writes its PID into. The lock, not the file's
// existence, says the directory is in use: the kernel drops it when the
// process ends, however it ends, so a stale file after a crash is no
// obstacle. The PID in it is only for the message.
const pidFile = "strand.pid"

// dirLock is a held lock on a data directory.
type dirLock struct{ f *os.File }

// lockDataDir takes the exclusive lock on dir (created if missing) for
// node name, or says who holds it: the PID recorded in the pid file, and
// that process's command line when /proc has it.
func lockDataDir(dir, name string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("node: data directory of %s: %w", name, err)
	}
	path := filepath.Join(dir, pidFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("node: data directory of %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := holderOf(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is held by %s: is %s already running? Stop that process before starting %s again "+
				"(`strand net down` stops a network's nodes), or give this node a dataDir of its own", ErrDataDirInUse, dir, holder, name, name)
		}
		return nil, fmt.Errorf("node: locking the data directory %s of %s: %w", dir, name, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("node: writing %s: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

// holderOf describes the process whose PID the pid file records.
func holderOf(f *os.File) string {
	raw := make([]byte, 32)
	n, _ := f.ReadAt(raw, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw[:n])))
	if err != nil || pid <= 0 {
		return "another process (its PID is not recorded in " + f.Name() + ")"
	}
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(cmd) == 0 {
		return fmt.Sprintf("process %d", pid)
	}
	return fmt.Sprintf("process %d (%s)", pid, string(bytes.TrimRight(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}), " ")))
}

// release drops the lock. The pid file stays: removing it would race
// with a process that has just opened it to take the lock.
func (l *dirLock) release() error {
	if l == nil {
		return nil
	}
	return l.f.Close()
}

// DataDirHolder reports whether a process holds the lock on the data
// directory dir, and the PID it recorded (0 if none). It takes and drops
// a shared lock to find out, so a node starting at that very moment
// could find the directory busy; callers are status displays, not
// supervisors.
func DataDirHolder(dir string) (pid int, held bool) {
	f, err := os.Open(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		return 0, false // the kernel unlocks at Close
	}
	raw := make([]byte, 32)
	n, _ := f.ReadAt(raw, 0)
	pid, _ = strconv.Atoi(strings.TrimSpace(string(raw[:n])))
	return pid, true
}

// wasmCacheDir is where a node keeps the machine code of the WebAssembly
// contracts it compiled (wasm.Options.CacheDir): a restarted node loads
// it instead of compiling again. Deleting it costs only that compile.
func wasmCacheDir(cfg *NodeConfig) string { return filepath.Join(cfg.DataDir, "wasm-cache") }
