package isolation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// DefaultParents are the directories Open tries, in order, when
// ActuatorOptions.Parent is empty: the cgroup v1 cpu hierarchy under its
// two usual names, then the cgroup v2 root.
var DefaultParents = []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup"}

// DefaultPrefix is ActuatorOptions.Prefix's default.
const DefaultPrefix = "strand"

// ActuatorOptions says where the actuator makes its cgroups.
type ActuatorOptions struct {
	// Parent is the cgroup directory the actuator makes its subtree in:
	// a directory of the cgroup v1 cpu hierarchy, or a cgroup v2 directory
	// whose cgroup.subtree_control enables cpu. It must be absolute and
	// clean. Empty tries DefaultParents in order.
	Parent string
	// Prefix names the subtree, Prefix-PID, PID being this process's.
	// 1 to 32 of [a-z0-9-]. Default DefaultPrefix.
	Prefix string
	// Components are the cgroups made in the subtree, one per component
	// (Controller.Components' names). Names as Component.Name.
	Components []string
}

// Actuator owns one cgroup subtree, Parent/Prefix-PID, with one child
// cgroup per component, and sets their CPU weight: cpu.shares under
// cgroup v1, cpu.weight (converted by Shares.Weight) under cgroup v2.
//
// Invariants: the actuator writes only inside its own subtree, inside the
// subtrees of dead runs it removes, and into the cgroup.procs of the
// cgroups processes leave to (Parent, or the v2 root; see Close); it
// removes only subtrees named Prefix-PID whose PID is not a live process; processes are moved out of a cgroup before it is
// removed and are never signalled. An Actuator is for one goroutine.
type Actuator struct {
	parent    string
	dir       string // Parent/Prefix-PID
	v2        bool
	groups    map[string]string
	names     []string          // components, in ActuatorOptions order
	shares    map[string]Shares // each component's share as last written
	leftovers []string
	closed    bool
}

// Open detects the hierarchy, removes the leftovers of earlier runs that
// died without Close (subtrees Parent/Prefix-PID whose PID is not alive,
// their processes moved to Parent first), and makes this run's subtree.
// When no parent is usable it returns an error wrapping ErrNoCgroup that
// names each path tried and why it failed.
func Open(opts ActuatorOptions) (*Actuator, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return openFirst(opts, DefaultParents, "", open)
}

// openFirst opens the first of parents (opts.Parent alone, when set) that
// open accepts; otherwise its error wraps ErrNoCgroup and gives, after
// what, each parent's reason. Open and OpenMemory share it.
func openFirst[T any](opts ActuatorOptions, parents []string, what string, open func(string, ActuatorOptions) (T, error)) (T, error) {
	if opts.Parent != "" {
		parents = []string{opts.Parent}
	}
	var whys []string
	for _, p := range parents {
		v, err := open(p, opts)
		if err == nil {
			return v, nil
		}
		if len(parents) == 1 {
			var zero T
			return zero, fmt.Errorf("%w%s: %w", ErrNoCgroup, what, err)
		}
		whys = append(whys, err.Error())
	}
	var zero T
	return zero, fmt.Errorf("%w%s: %s", ErrNoCgroup, what, strings.Join(whys, "; "))
}

// EnsureDefaults fills in zero fields with their defaults.
func (o *ActuatorOptions) EnsureDefaults() {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
}

// Validate reports the first invalid field, naming its value and what is
// allowed. An empty Prefix is invalid: call EnsureDefaults first.
func (o ActuatorOptions) Validate() error {
	if o.Parent != "" && (!filepath.IsAbs(o.Parent) || filepath.Clean(o.Parent) != o.Parent) {
		return fmt.Errorf("%w: ActuatorOptions.Parent is %q, want an absolute, clean path (or empty for %v)", ErrBadConfig, o.Parent, DefaultParents)
	}
	if err := checkName(o.Prefix); err != nil {
		return fmt.Errorf("%w: ActuatorOptions.Prefix %v", ErrBadConfig, err)
	}
	if len(o.Components) == 0 || len(o.Components) > maxComponent {
		return fmt.Errorf("%w: ActuatorOptions.Components has %d entries, want 1 to %d", ErrBadConfig, len(o.Components), maxComponent)
	}
	seen := make(map[string]bool, len(o.Components))
	for i, c := range o.Components {
		if err := checkName(c); err != nil {
			return fmt.Errorf("%w: ActuatorOptions.Components[%d] %v", ErrBadConfig, i, err)
		}
		if seen[c] {
			return fmt.Errorf("%w: ActuatorOptions.Components[%d] %q repeats an earlier component, want unique names", ErrBadConfig, i, c)
		}
		seen[c] = true
	}
	return nil
}

// open tries one parent; its errors name the parent and what is wrong.
func open(parent string, opts ActuatorOptions) (*Actuator, error) {
	v2, err := detect(parent)
	if err != nil {
		return nil, err
	}
	a := &Actuator{parent: parent, v2: v2, groups: make(map[string]string), shares: make(map[string]Shares)}
	if a.leftovers, err = a.removeLeftovers(opts.Prefix); err != nil {
		return nil, err
	}
	a.dir = filepath.Join(parent, fmt.Sprintf("%s-%d", opts.Prefix, os.Getpid()))
	if err := os.Mkdir(a.dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: cannot create this run's cgroup: %w%s", parent, err, hint(err))
	}
	if err := a.makeGroups(opts.Components); err != nil {
		return nil, errors.Join(err, a.Close())
	}
	return a, nil
}

// detect says whether parent is cgroup v2 (else v1) with the cpu
// controller, or why it is neither.
func detect(parent string) (v2 bool, err error) { return detectController(parent, "cpu", "cpu.shares") }

// detectController says whether parent is a cgroup v2 directory that
// enables controller for its children (else a directory of controller's
// v1 hierarchy, which holds v1File), or why it is neither.
func detectController(parent, controller, v1File string) (v2 bool, err error) {
	if fi, err := os.Stat(parent); err != nil {
		return false, fmt.Errorf("%s: %w (is the %s cgroup hierarchy mounted, or the delegated subtree created?)", parent, err, controller)
	} else if !fi.IsDir() {
		return false, fmt.Errorf("%s: not a directory", parent)
	}
	if exists(filepath.Join(parent, v1File)) {
		return false, nil
	}
	if !exists(filepath.Join(parent, "cgroup.controllers")) {
		return false, fmt.Errorf("%s: neither %s (cgroup v1 %s controller) nor cgroup.controllers (cgroup v2) is there", parent, v1File, controller)
	}
	ctl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil {
		return false, fmt.Errorf("%s: cgroup v2, but cannot read cgroup.subtree_control: %w", parent, err)
	}
	for _, c := range strings.Fields(string(ctl)) {
		if c == controller {
			return true, nil
		}
	}
	return false, fmt.Errorf("%s: cgroup v2 without the %s controller for its children (cgroup.subtree_control is %q, want it to include %s: echo +%s > %s)",
		parent, controller, strings.TrimSpace(string(ctl)), controller, controller, filepath.Join(parent, "cgroup.subtree_control"))
}

// hint explains the usual causes of a failed write to cgroupfs.
func hint(err error) string {
	switch {
	case errors.Is(err, syscall.EROFS):
		return " (the cgroup hierarchy is mounted read-only)"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Sprintf(" (not root, and the cgroup is not delegated to uid %d)", os.Geteuid())
	case errors.Is(err, syscall.EEXIST):
		return " (an actuator of this process is already open, or was not closed)"
	}
	return ""
}

func (a *Actuator) makeGroups(components []string) error {
	if a.v2 {
		ctl := filepath.Join(a.dir, "cgroup.subtree_control")
		if err := writeFile(ctl, "+cpu"); err != nil {
			return fmt.Errorf("enabling cpu in %s: %w%s", ctl, err, hint(err))
		}
	}
	for _, c := range components {
		g := filepath.Join(a.dir, c)
		if err := os.Mkdir(g, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w%s", g, err, hint(err))
		}
		a.groups[c] = g
		a.names = append(a.names, c)
		a.shares[c] = DefaultShares
	}
	return a.writeSubtree()
}

// writeSubtree sets the subtree's own weight to the sum of its
// components' shares. The kernel divides CPU between siblings by their
// weights level by level, so a neighbour beside the subtree (a sibling
// under Parent) competes with the subtree's weight, not with its
// components': with the subtree at the default 1024, raising a component
// would only take CPU from the other components. With the sum, the
// components stand against a neighbour as they would side by side under
// Parent (as containers do, each with its share), both at the defaults and
// when the controller raises one. The sum is clamped to the hierarchy's
// largest weight.
func (a *Actuator) writeSubtree() error {
	var sum Shares
	for _, s := range a.shares {
		sum += s
	}
	sum = min(sum, MaxShares)
	file, val := filepath.Join(a.dir, "cpu.shares"), strconv.Itoa(int(sum))
	if a.v2 {
		file, val = filepath.Join(a.dir, "cpu.weight"), strconv.Itoa(sum.Weight())
	}
	if err := writeFile(file, val); err != nil {
		return fmt.Errorf("isolation: writing %s to %s: %w%s", val, file, err, hint(err))
	}
	return nil
}

// Hierarchy returns "v1" or "v2".
func (a *Actuator) Hierarchy() string {
	if a.v2 {
		return "v2"
	}
	return "v1"
}

// Dir returns this run's subtree, Parent/Prefix-PID.
func (a *Actuator) Dir() string { return a.dir }

// Leftovers returns the subtrees of dead earlier runs that Open removed.
func (a *Actuator) Leftovers() []string { return a.leftovers }

// Group returns component's cgroup directory, or an error naming the
// component and the ones there are.
func (a *Actuator) Group(component string) (string, error) {
	if a.closed {
		return "", fmt.Errorf("isolation: actuator for %s is closed", a.dir)
	}
	g, ok := a.groups[component]
	if !ok {
		return "", fmt.Errorf("isolation: no cgroup for component %q in %s (have %s)", component, a.dir, strings.Join(a.names, ", "))
	}
	return g, nil
}

// Move moves process pid, with all its threads, into component's cgroup.
// Its children forked afterwards start there too.
func (a *Actuator) Move(component string, pid int) error {
	g, err := a.Group(component)
	if err != nil {
		return err
	}
	if err := writeProc(g, pid); err != nil {
		return fmt.Errorf("isolation: moving pid %d into %s: %w", pid, g, err)
	}
	return nil
}

// Procs returns the processes in component's cgroup (not those of its
// children, which the actuator does not make), as the kernel lists them:
// a process that exited is no longer there.
func (a *Actuator) Procs(component string) ([]int, error) {
	g, err := a.Group(component)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(g, "cgroup.procs")
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("isolation: reading %s: %w", file, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("isolation: %s holds %q, want process ids", file, f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// Set sets component's CPU weight to s, which must be in
// [MinShares, MaxShares], and the subtree's to the sum of its
// components' (see writeSubtree).
func (a *Actuator) Set(component string, s Shares) error {
	if s < MinShares || s > MaxShares {
		return fmt.Errorf("isolation: shares %d for %s, want in [%d, %d]", s, component, MinShares, MaxShares)
	}
	g, err := a.Group(component)
	if err != nil {
		return err
	}
	file, val := filepath.Join(g, "cpu.shares"), strconv.Itoa(int(s))
	if a.v2 {
		file, val = filepath.Join(g, "cpu.weight"), strconv.Itoa(s.Weight())
	}
	if err := writeFile(file, val); err != nil {
		return fmt.Errorf("isolation: writing %s to %s: %w%s", val, file, err, hint(err))
	}
	a.shares[component] = s
	return a.writeSubtree()
}

// Get reads component's CPU weight back, in shares (under v2, the shares
// its cpu.weight schedules like).
func (a *Actuator) Get(component string) (Shares, error) {
	g, err := a.Group(component)
	if err != nil {
		return 0, err
	}
	file := filepath.Join(g, "cpu.shares")
	if a.v2 {
		file = filepath.Join(g, "cpu.weight")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("isolation: reading %s: %w", file, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("isolation: %s holds %q, want an integer", file, b)
	}
	if a.v2 {
		return SharesOfWeight(n), nil
	}
	return Shares(n), nil
}

// Apply sets the shares the controller decided, in order, and stops at
// the first failure.
func (a *Actuator) Apply(changes []Change) error {
	for _, c := range changes {
		if err := a.Set(c.Component, c.To); err != nil {
			return fmt.Errorf("%w (applying %s)", err, c)
		}
	}
	return nil
}

// Close moves every process still in this run's cgroups to Parent (under
// v2, to the hierarchy's root when Parent may not hold processes) and
// removes the cgroups, leaving the host's cgroups as they were before
// Open. The processes keep running, at Parent's weight. Close after the
// first call does nothing.
func (a *Actuator) Close() error {
	if a.closed {
		return nil
	}
	a.closed = true
	if err := a.removeTree(a.dir); err != nil {
		return fmt.Errorf("isolation: removing %s: %w", a.dir, err)
	}
	return nil
}
