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

// Leftovers. A run that dies without Close (SIGKILL, power loss of the
// process, a panic past the loop) leaves Parent/Prefix-PID behind, often
// with its node processes still inside. The owner's PID in the name is the
// run's lease: a subtree whose PID is not a live process belongs to no
// one, and the next Open removes it. A subtree whose PID is live is never
// touched, even if the PID was reused by an unrelated process since; it is
// removed by a later Open once that process is gone.

// removeLeftovers removes the subtrees of dead earlier runs under Parent
// and returns their paths.
func (a *Actuator) removeLeftovers(prefix string) ([]string, error) {
	return a.removeDead(prefix, false)
}

// RemoveDead removes the cgroups under parent (of the cpu or the memory
// controller) named prefix-PID or
// prefix-PID-SUFFIX whose PID is not a live process, and every cgroup
// below them, moving their processes to parent first; it returns their
// paths. Tests that make cgroups of their own call it before making
// theirs, so that a test binary killed before its cleanup leaves them
// only until the next run.
func RemoveDead(parent, prefix string) ([]string, error) {
	v2, err := detect(parent)
	if err != nil {
		v2, err = detectMemory(parent)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	a := &Actuator{parent: parent, v2: v2}
	return a.removeDead(prefix, true)
}

// removeDead removes the subtrees under Parent named prefix-PID (and,
// with suffix, prefix-PID-SUFFIX) whose PID is dead.
func (a *Actuator) removeDead(prefix string, suffix bool) ([]string, error) {
	entries, err := os.ReadDir(a.parent)
	if err != nil {
		return nil, fmt.Errorf("%s: listing earlier runs' cgroups: %w%s", a.parent, err, hint(err))
	}
	var removed []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix+"-")
		if suffix {
			rest, _, _ = strings.Cut(rest, "-")
		}
		pid, err := strconv.Atoi(rest)
		if !ok || err != nil || !e.IsDir() || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		dir := filepath.Join(a.parent, e.Name())
		if err := a.removeTree(dir); err != nil {
			return removed, fmt.Errorf("%s: removing the leftover of dead run %d: %w", dir, pid, err)
		}
		removed = append(removed, dir)
	}
	return removed, nil
}

// alive says whether pid names a process (a zombie counts: its parent has
// not reaped it yet).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// RemoveTree removes the cgroup dir and every cgroup below it, moving
// their processes to parent first (RemoveDead's removal, for a cgroup the
// caller owns).
func RemoveTree(parent, dir string) error {
	v2, err := detect(parent)
	if err != nil {
		v2, err = detectMemory(parent)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	a := &Actuator{parent: parent, v2: v2}
	return a.removeTree(dir)
}

// busyWait bounds how long removeTree waits for a cgroup that still
// counts a process after its processes were moved out.
const busyWait = 2 * time.Second

// removeTree removes the cgroup dir and every cgroup below it, deepest
// first, moving each one's processes out before removing it. rmdir fails
// with EBUSY while the cgroup still counts a process: one that forked
// between the move and the rmdir, or one that is exiting (its
// /proc/PID/cmdline is already empty and it can no longer be moved, but
// the kernel has not yet taken it out of the cgroup). The move is then
// repeated, every 10 ms for at most busyWait.
func (a *Actuator) removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := a.removeTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	deadline := time.Now().Add(busyWait)
	for {
		if err := a.evacuate(dir); err != nil {
			return err
		}
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("rmdir %s: %w", dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// evacuate moves every process in cgroup dir to Parent. Under v2 a
// non-root Parent that enables controllers for its children may not hold
// processes (the kernel answers EBUSY); they go to the hierarchy's root
// instead.
func (a *Actuator) evacuate(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return fmt.Errorf("reading %s: %w", filepath.Join(dir, "cgroup.procs"), err)
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("%s holds %q, want process ids", filepath.Join(dir, "cgroup.procs"), f)
		}
		to := a.parent
		err = writeProc(to, pid)
		if a.v2 && errors.Is(err, syscall.EBUSY) {
			to = v2Root(a.parent)
			err = writeProc(to, pid)
		}
		if err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("moving pid %d out of %s into %s: %w", pid, dir, to, err)
		}
	}
	return nil
}

// v2Root returns the root of the cgroup v2 hierarchy holding dir: the
// nearest ancestor without cgroup.type, which every cgroup but the root
// has.
func v2Root(dir string) string {
	for exists(filepath.Join(dir, "cgroup.type")) && dir != "/" {
		dir = filepath.Dir(dir)
	}
	return dir
}

// writeProc moves pid into cgroup dir.
func writeProc(dir string, pid int) error {
	return writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid))
}

// writeFile writes val to the cgroup file path in one write, as the
// kernel wants. Unlike os.WriteFile it never creates the file: a missing
// file means path is not in a cgroup hierarchy.
func writeFile(path, val string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(val)
	return errors.Join(err, f.Close())
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
