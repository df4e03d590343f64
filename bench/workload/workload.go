package workload

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Op is one operation a client sends.
type Op struct {
	Contract string
	Function string
	Args     []string
	// Submit: endorse, order and commit; otherwise evaluate (a query on
	// one peer, not ordered).
	Submit bool
	// Delta is the money a Smallbank operation adds to the total if it
	// commits VALID (the invariant's bookkeeping); 0 elsewhere.
	Delta int64
	// Debit, for an operation whose effect depends on the state it read
	// (H-Store's write_check and its penalty), says that the contract
	// returns the money it took, as decimal text: the invariant counts
	// that instead of Delta.
	Debit bool
}

// Env is what a workload needs to know about the round.
type Env struct {
	// Run namespaces keys; unique per round against one network.
	Run int64
	// Clients is the number of client generators the round will use.
	Clients int
	// Seed seeds every client's generator.
	Seed uint64
}

// Workload is one benchmark workload.
type Workload interface {
	// Name is the workload's name as New takes it.
	Name() string
	// Contract is the contract the workload calls.
	Contract() string
	// Params returns the parameters in effect, defaults included.
	Params() map[string]string
	// Setup returns the stages of setup transactions.
	Setup() [][]Op
	// Client returns the operation generator of client id (0 ≤ id < Env.Clients).
	Client(id int) Generator
}

// SetupSummarizer is implemented by a workload that can say what its
// setup created ("created 1000 accounts").
type SetupSummarizer interface {
	SetupSummary() string
}

// Generator draws a client's operations; not safe for concurrent use.
type Generator interface {
	Next() Op
}

// GeneratorFunc adapts a function to Generator.
type GeneratorFunc func() Op

// Next calls f.
func (f GeneratorFunc) Next() Op { return f() }

// builders are the workloads by name.
var builders = map[string]func(p *params, env Env) Workload{
	"smallbank":  newSmallbank,
	"ycsb":       newYCSB,
	"fixedasset": newFixedAsset,
	"kmeans":     newKMeans,
	"scm":        newSCM,
	"empty":      newEmpty,
}

// Names returns the workloads New knows, sorted.
func Names() []string { return slices.Sorted(maps.Keys(builders)) }

// New builds workload name with the given parameters (nil: defaults).
func New(name string, given map[string]string, env Env) (Workload, error) {
	b, ok := builders[name]
	if !ok {
		return nil, fmt.Errorf("workload: unknown workload %q: want one of %s", name, strings.Join(Names(), ", "))
	}
	if env.Clients < 1 {
		return nil, fmt.Errorf("workload %s: %d clients: want at least 1", name, env.Clients)
	}
	p := &params{workload: name, given: given, used: map[string]string{}}
	w := b(p, env)
	if err := p.finish(); err != nil {
		return nil, err
	}
	return w, nil
}

// rng returns client id's generator.
func rng(env Env, id int) *rand.Rand { return rand.New(rand.NewPCG(env.Seed, uint64(id)+1)) }

// params reads and checks a workload's parameters. The first error is
// kept; finish reports it, or an unknown parameter.
type params struct {
	workload string
	given    map[string]string
	used     map[string]string // name → value in effect
	err      error
}

func (p *params) value(name, def string) (string, bool) {
	v, ok := p.given[name]
	if !ok {
		v = def
	}
	p.used[name] = v
	return v, ok
}

func (p *params) fail(name, v, want string) {
	if p.err == nil {
		p.err = fmt.Errorf("workload %s: parameter %s = %q: want %s", p.workload, name, v, want)
	}
}

func (p *params) int(name string, def, lo, hi int) int {
	v, _ := p.value(name, strconv.Itoa(def))
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		p.fail(name, v, fmt.Sprintf("an integer %d to %d", lo, hi))
		return def
	}
	return n
}

func (p *params) float(name string, def, lo, hi float64) float64 {
	v, _ := p.value(name, strconv.FormatFloat(def, 'g', -1, 64))
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < lo || f > hi {
		p.fail(name, v, fmt.Sprintf("a number %g to %g", lo, hi))
		return def
	}
	return f
}

func (p *params) choice(name, def string, allowed ...string) string {
	v, _ := p.value(name, def)
	if !slices.Contains(allowed, v) {
		p.fail(name, v, "one of "+strings.Join(allowed, ", "))
		return def
	}
	return v
}

// submit reads the "readonly" parameter: how read-only operations run.
func (p *params) submit() bool {
	return p.choice("readonly", "submit", "submit", "evaluate") == "submit"
}

func (p *params) finish() error {
	if p.err != nil {
		return p.err
	}
	for name := range p.given {
		if _, ok := p.used[name]; !ok {
			known := slices.Sorted(maps.Keys(p.used))
			return fmt.Errorf("workload %s: unknown parameter %q: want one of %s", p.workload, name, strings.Join(known, ", "))
		}
	}
	return nil
}

// paramsOf is Params for every workload.
func (p *params) snapshot() map[string]string { return maps.Clone(p.used) }

// mix is a weighted choice among named operations.
type mix struct {
	names   []string
	weights []int
	total   int
}

// parseMix reads "read=50,update=50", allowing only the names in ops.
func parseMix(s string, ops ...string) (mix, error) {
	var m mix
	for part := range strings.SplitSeq(s, ",") {
		name, w, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(w)
		if !ok || err != nil || n < 0 {
			return m, fmt.Errorf("%q is not name=weight with a weight of 0 or more", part)
		}
		if !slices.Contains(ops, name) {
			return m, fmt.Errorf("unknown operation %q: want %s", name, strings.Join(ops, ", "))
		}
		if slices.Contains(m.names, name) {
			return m, fmt.Errorf("operation %q named twice", name)
		}
		m.names, m.weights, m.total = append(m.names, name), append(m.weights, n), m.total+n
	}
	if m.total == 0 {
		return m, fmt.Errorf("the weights add up to 0")
	}
	return m, nil
}

func mustMix(s string) mix {
	var ops []string
	for part := range strings.SplitSeq(s, ",") {
		name, _, _ := strings.Cut(part, "=")
		ops = append(ops, name)
	}
	m, err := parseMix(s, ops...)
	if err != nil {
		panic(err)
	}
	return m
}

// pick draws an operation name with the mix's weights.
func (m mix) pick(r *rand.Rand) string {
	n := r.IntN(m.total)
	for i, w := range m.weights {
		if n < w {
			return m.names[i]
		}
		n -= w
	}
	panic("unreachable: weights add up to total")
}

// String renders the mix as name=weight pairs in a stable order.
func (m mix) String() string {
	parts := make([]string, len(m.names))
	for i := range m.names {
		parts[i] = fmt.Sprintf("%s=%d", m.names[i], m.weights[i])
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// mixParam reads a mix parameter that is either a preset name or a custom
// name=weight list over ops.
func (p *params) mix(name, def string, presets map[string]string, ops ...string) mix {
	v, _ := p.value(name, def)
	s, ok := presets[strings.ToLower(v)]
	if !ok {
		s = v
	}
	m, err := parseMix(s, ops...)
	if err != nil {
		p.fail(name, v, fmt.Sprintf("one of %s or a list like %s=50,%s=50 (%v)",
			strings.Join(slices.Sorted(maps.Keys(presets)), ", "), ops[0], ops[len(ops)-1], err))
		return mustMix(presets[def])
	}
	return m
}

func itoa(n int) string { return strconv.Itoa(n) }
