package contract

import "sort"

// Builtins is the set of contracts compiled into a binary, by name: what
// a definition with runtime builtin may name. It is immutable; a node
// gets one as a value (node.DefaultBuiltins), never from global state.
type Builtins struct {
	m map[string]func() Contract
}

// NewBuiltins returns a set of the constructors in m (copied).
func NewBuiltins(m map[string]func() Contract) *Builtins {
	b := &Builtins{m: make(map[string]func() Contract, len(m))}
	for k, v := range m {
		b.m[k] = v
	}
	return b
}

// New returns a new instance of the named contract.
func (b *Builtins) New(name string) (Contract, bool) {
	f, ok := b.m[name]
	if !ok {
		return nil, false
	}
	return f(), true
}

// Names returns the contracts of the set, sorted.
func (b *Builtins) Names() []string {
	names := make([]string, 0, len(b.m))
	for n := range b.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
