package lifecycle

import (
	"fmt"
	"sort"

	"github.com/strand-ledger/strand/policy"
)

// Entry is the definition in force for one contract: its sequence and
// parsed policy, and the definition itself (nil for a contract of the
// genesis channel file, which has sequence 1 and the file's policy).
type Entry struct {
	Sequence uint64
	Policy   *policy.Policy
	Def      *Definition
}

// Table is the set of definitions in force after some block. It is
// immutable; Next returns a successor.
type Table struct {
	m map[string]Entry
}

// NewTable returns a table of the genesis contracts (sequence 1, their
// policies) overlaid by committed definitions (from state).
func NewTable(genesis map[string]*policy.Policy, defs []*Definition) *Table {
	t := &Table{m: make(map[string]Entry, len(genesis)+len(defs))}
	for name, p := range genesis {
		t.m[name] = Entry{Sequence: 1, Policy: p}
	}
	for _, d := range defs {
		t.m[d.Name] = Entry{Sequence: d.Sequence, Policy: d.Parsed, Def: d}
	}
	return t
}

// Get returns the entry of name.
func (t *Table) Get(name string) (Entry, bool) {
	e, ok := t.m[name]
	return e, ok
}

// Len is the number of contracts defined.
func (t *Table) Len() int { return len(t.m) }

// Names returns the defined contracts, sorted.
func (t *Table) Names() []string {
	names := make([]string, 0, len(t.m))
	for n := range t.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Policies maps every defined contract to its policy.
func (t *Table) Policies() map[string]*policy.Policy {
	m := make(map[string]*policy.Policy, len(t.m))
	for n, e := range t.m {
		m[n] = e.Policy
	}
	return m
}

// Next returns the table with d in force, or ErrSequence if d's sequence
// is not the current one plus one (1 for a new contract).
func (t *Table) Next(d *Definition) (*Table, error) {
	cur := t.m[d.Name].Sequence
	if d.Sequence != cur+1 {
		why := "a replay or a downgrade"
		if d.Sequence > cur+1 {
			why = "a sequence skipped"
		}
		return nil, fmt.Errorf("%w: contract %q is at sequence %d, so its next definition must have sequence %d; got %d (%s)",
			ErrSequence, d.Name, cur, cur+1, d.Sequence, why)
	}
	n := &Table{m: make(map[string]Entry, len(t.m)+1)}
	for k, v := range t.m {
		n.m[k] = v
	}
	n.m[d.Name] = Entry{Sequence: d.Sequence, Policy: d.Parsed, Def: d}
	return n, nil
}
