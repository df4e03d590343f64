package localnet

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

// Proc is what Up, Down and Status know of one node's process.
type Proc struct {
	Node
	PID       int    // recorded PID; 0 when none is recorded
	Alive     bool   // PID runs this node's start command
	ByHand    bool   // Status: running, but not from net up's PID file: its data directory is locked (started by hand)
	Reachable bool   // Address accepted a TCP connection
	Started   bool   // Up started it (it was not running)
	Removed   bool   // an orderer a config update removed from the channel (Layout.Removed): Up does not start it
	Log       string // its log file

	died <-chan struct{} // closed when a process Up started exits
	err  error           // Down: what went wrong stopping it
}

// LogFile returns the log file of node name: logs/<name>.log.
func (l *Layout) LogFile(name string) string { return filepath.Join(l.Dir, "logs", name+".log") }

// PIDFile returns the file that records node name's PID: pids/<name>.pid.
func (l *Layout) PIDFile(name string) string { return filepath.Join(l.Dir, "pids", name+".pid") }

// UpOptions configures Up.
type UpOptions struct {
	// Command is the strand binary (and any arguments before the
	// subcommand); Up appends "<role> start --config <node file>". Required.
	Command []string
	// Wait bounds how long each node may take to accept connections.
	// Default 20s.
	Wait time.Duration
	// DieWithCaller has the kernel kill each node started when the
	// caller dies (PR_SET_PDEATHSIG), for networks that must not outlive
	// their caller (a bench round). The signal follows the OS thread that
	// started the node: call Up from a goroutine that is not locked to a
	// thread that may exit.
	DieWithCaller bool
	// Env, if set, returns extra environment (KEY=VALUE) for node n's
	// process, appended to the caller's (a bench round's GOMEMLIMIT for
	// a memory node it holds to a memory cgroup).
	Env func(n Node) []string
	// Started, if set, is called with each process Up starts as soon as
	// it started, before Up waits for it to accept connections (a bench
	// round moves a memory node into its memory cgroup there, before it
	// opens its storage); an error stops Up.
	Started func(p Proc) error
	// Only, if set, names the nodes Up may start (net add-org starts the
	// new org's peer alone); the others are reported, not started.
	Only []string
}

// Up starts every node of the network that is not running, each as a
// process of its own in a new session (so it outlives the caller), with
// stdout and stderr appended to LogFile and its PID in PIDFile. Memory
// nodes start first, then orderers, then peers, each group once the one
// before accepts TCP connections; Up returns once every node accepts TCP
// connections at its address, or with an error naming the node and its
// log file. Compute nodes start last (they join their peers). The
// returned procs are l.Nodes', l.Memnodes' then l.Computes'. An
// orderer the channel removed (Layout.Removed) is not started: its Proc
// says Removed.
func Up(l *Layout, opts UpOptions) ([]Proc, error) {
	if len(opts.Command) == 0 {
		return nil, errors.New("localnet: UpOptions.Command is empty, want the strand binary")
	}
	if opts.Wait == 0 {
		opts.Wait = 20 * time.Second
	}
	all := l.all()
	procs := make([]Proc, len(all))
	for _, kind := range []string{MemnodeKind, identity.RoleOrderer.String(), identity.RolePeer.String(), ComputeKind} {
		var started []int
		for i, n := range all {
			if n.Kind() != kind {
				continue
			}
			procs[i] = l.proc(n)
			if procs[i].Alive || procs[i].Removed || opts.Only != nil && !slices.Contains(opts.Only, n.Name) {
				continue
			}
			var env []string
			if opts.Env != nil {
				env = opts.Env(n)
			}
			done, err := l.start(&procs[i], opts.Command, env, opts.DieWithCaller)
			if err != nil {
				return procs, err
			}
			started = append(started, i)
			procs[i].died = done
			if opts.Started != nil {
				if err := opts.Started(procs[i]); err != nil {
					return procs, err
				}
			}
		}
		for _, i := range started {
			if err := l.awaitReachable(&procs[i], opts.Wait); err != nil {
				return procs, err
			}
		}
	}
	return procs, nil
}

// start starts n's process and records its PID. The returned channel is
// closed when the process exits (it is reaped, so no zombie is left when
// the caller lives on).
func (l *Layout) start(p *Proc, command, env []string, dieWithCaller bool) (<-chan struct{}, error) {
	if err := os.MkdirAll(filepath.Dir(p.Log), 0o755); err != nil {
		return nil, fmt.Errorf("localnet: %w", err)
	}
	logf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localnet: log of %s: %w", p.Name, err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- %s: starting %s %s\n", time.Now().Format(time.RFC3339), p.Kind(), p.Name)
	args := append(append([]string{}, command[1:]...), nodeArgs(p.Node)...)
	cmd := exec.Command(command[0], args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = l.Dir
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if dieWithCaller {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("localnet: starting %s %s (%s): %w", p.Kind(), p.Name, command[0], err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	p.PID, p.Alive, p.Started = cmd.Process.Pid, true, true
	pidFile := l.PIDFile(p.Name)
	if err := os.MkdirAll(filepath.Dir(pidFile), 0o755); err != nil {
		return done, fmt.Errorf("localnet: %w", err)
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(p.PID)+"\n"), 0o644); err != nil {
		return done, fmt.Errorf("localnet: recording the PID of %s: %w", p.Name, err)
	}
	return done, nil
}

// nodeArgs are the arguments that start node n: the tail of the command
// line that identifies its process.
func nodeArgs(n Node) []string { return []string{n.Kind(), "start", "--config", n.Config} }

// all is l.Nodes, l.Memnodes, then l.Computes.
func (l *Layout) all() []Node {
	return append(append(append([]Node{}, l.Nodes...), l.Memnodes...), l.Computes...)
}

func (l *Layout) awaitReachable(p *Proc, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		if reachable(p.Address, 200*time.Millisecond) {
			p.Reachable = true
			return nil
		}
		select {
		case <-p.died:
			p.Alive = false
			return fmt.Errorf("localnet: %s %s (pid %d) exited before accepting connections at %s; see its log %s%s",
				p.Kind(), p.Name, p.PID, p.Address, p.Log, logTail(p.Log, 8))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("localnet: %s %s (pid %d) does not accept connections at %s after %v; see its log %s%s",
				p.Kind(), p.Name, p.PID, p.Address, wait, p.Log, logTail(p.Log, 8))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// DownOptions configures Down.
type DownOptions struct {
	// Timeout bounds the wait after SIGTERM before SIGKILL. Default 10s.
	Timeout time.Duration
	// Purge also deletes every node's data directory (ledger and state).
	Purge bool
}

// Down stops every recorded node process: SIGTERM, then SIGKILL to those
// still running after Timeout. Compute nodes stop first, then peers and
// orderers, then the memory nodes (a peer does not lose its state under
// it). It signals a PID
// only while that PID runs this node's start command for this network's
// node file, so a process that reused a PID is left alone. It removes the
// PID files. The returned procs are l.Nodes', l.Memnodes', then
// l.Computes'.
func Down(l *Layout, opts DownOptions) ([]Proc, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	computes := l.stop(l.Computes, opts.Timeout)
	procs := append(append(l.stop(l.Nodes, opts.Timeout), l.stop(l.Memnodes, opts.Timeout)...), computes...)
	var errs []error
	for _, p := range procs {
		errs = append(errs, p.err)
	}
	if opts.Purge && errors.Join(errs...) == nil {
		for _, n := range append(append([]Node{}, l.Nodes...), l.Memnodes...) { // compute nodes have no data
			dir, err := dataDir(n)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, fmt.Errorf("localnet: purging %s: %w", n.Name, err))
			}
		}
	}
	return procs, errors.Join(errs...)
}

// dataDir is the data directory of n's node or memnode file.
func dataDir(n Node) (string, error) {
	if n.Kind() == MemnodeKind {
		cfg, err := node.LoadMemnode(n.Config)
		if err != nil {
			return "", err
		}
		return cfg.DataDir, nil
	}
	cfg, err := node.LoadNode(n.Config)
	if err != nil {
		return "", err
	}
	return cfg.DataDir, nil
}

// stop stops the recorded processes of nodes together (Down); each Proc's
// err says what went wrong with it.
func (l *Layout) stop(nodes []Node, timeout time.Duration) []Proc {
	procs := make([]Proc, len(nodes))
	for i, n := range nodes {
		procs[i] = l.proc(n)
		if procs[i].Alive {
			if err := syscall.Kill(procs[i].PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
				procs[i].err = errors.Join(procs[i].err, fmt.Errorf("localnet: SIGTERM to %s (pid %d): %w", n.Name, procs[i].PID, err))
			}
		}
	}
	deadline := time.Now().Add(timeout)
	for i := range procs {
		p := &procs[i]
		for p.Alive && isNodeProcess(p.PID, p.Node) {
			if time.Now().After(deadline) {
				if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
					p.err = errors.Join(p.err, fmt.Errorf("localnet: SIGKILL to %s (pid %d): %w", p.Name, p.PID, err))
				}
				deadline = time.Now().Add(2 * time.Second) // let the kernel reap it
				if waitGone(p, deadline) {
					break
				}
				p.err = errors.Join(p.err, fmt.Errorf("localnet: %s (pid %d) still runs after SIGKILL", p.Name, p.PID))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		p.Alive = p.Alive && isNodeProcess(p.PID, p.Node)
		if !p.Alive {
			if err := os.Remove(l.PIDFile(p.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				p.err = errors.Join(p.err, fmt.Errorf("localnet: %w", err))
			}
		}
	}
	return procs
}

func waitGone(p *Proc, deadline time.Time) bool {
	for time.Now().Before(deadline) {
		if !isNodeProcess(p.PID, p.Node) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Status reports every node's recorded PID, whether it runs, and whether
// its address accepts TCP connections: l.Nodes, l.Memnodes, then
// l.Computes. A node with a data directory (not a compute node) without a
// PID file of Up's that holds its data directory's lock runs too, started
// by hand (ByHand, with the PID it recorded there).
func Status(l *Layout) []Proc {
	all := l.all()
	procs := make([]Proc, len(all))
	for i, n := range all {
		procs[i] = l.proc(n)
		procs[i].Reachable = reachable(n.Address, 500*time.Millisecond)
		if !procs[i].Alive && n.Kind() != ComputeKind {
			// Started by hand (`strand peer start`): no PID file of
			// ours, but the node holds its data directory's lock.
			if dir := dataDirOf(n); dir != "" {
				if pid, held := node.DataDirHolder(dir); held {
					procs[i].PID, procs[i].Alive, procs[i].ByHand = pid, true, true
				}
			}
		}
	}
	return procs
}

// dataDirOf is node n's data directory, "" if its file does not load.
func dataDirOf(n Node) string {
	if n.Kind() == MemnodeKind {
		if cfg, err := node.LoadMemnode(n.Config); err == nil {
			return cfg.DataDir
		}
		return ""
	}
	if cfg, err := node.LoadNode(n.Config); err == nil {
		return cfg.DataDir
	}
	return ""
}

// proc reads node n's PID file and checks the process.
func (l *Layout) proc(n Node) Proc {
	p := Proc{Node: n, Log: l.LogFile(n.Name), Removed: n.Role == identity.RoleOrderer && l.Removed(n.Name)}
	raw, err := os.ReadFile(l.PIDFile(n.Name))
	if err != nil {
		return p
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && pid > 0 {
		p.PID = pid
		p.Alive = isNodeProcess(pid, n)
	}
	return p
}

// isNodeProcess reports whether pid runs `strand <kind> start --config
// <n.Config>`. The binary itself is not compared (tests run a test binary
// in its place); the arguments name this network's node file, which no
// unrelated process does. A zombie has an empty command line: not running.
func isNodeProcess(pid int, n Node) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(raw) == 0 {
		return false
	}
	args := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	want := nodeArgs(n)
	if len(args) < len(want)+1 {
		return false
	}
	tail := args[len(args)-len(want):]
	for i := range want {
		if tail[i] != want[i] {
			return false
		}
	}
	return true
}

func reachable(addr string, timeout time.Duration) bool {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// logTail returns the last n lines of a log file, indented, for an error
// message; "" when it cannot be read.
func logTail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil || len(raw) == 0 {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "; its last lines:\n    " + string(bytes.Join(lines, []byte("\n    ")))
}
