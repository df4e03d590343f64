package policy

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/strand-ledger/strand/identity"
)

// Principal is one leaf of a policy: a member of Org with Role.
// identity.RoleMember matches any role of that org.
type Principal struct {
	Org  string
	Role identity.Role
}

// Signer is a validated endorser: the org and role of an identity whose
// signature has been checked.
type Signer struct {
	Org  string
	Role identity.Role
}

type nodeKind uint8

const (
	kindPrincipal nodeKind = iota
	kindAND
	kindOR
	kindOutOf
)

// node is one operator or principal. An operator's children are
// kids[first:end] of its Policy; n is how many of them must be satisfied.
type node struct {
	kind       nodeKind
	n          int32
	first, end int32
	p          Principal
}

// Policy is a parsed endorsement policy. It is immutable and safe for
// concurrent use.
type Policy struct {
	nodes []node  // children before parents; the root is last
	kids  []int32 // child node indices, each operator's contiguous
	str   string  // canonical form
	orgs  []string
}

// Parse parses expr. Its errors are *SyntaxError.
func Parse(expr string) (*Policy, error) {
	if len(expr) > MaxExprBytes {
		return nil, &SyntaxError{Expr: expr, Pos: MaxExprBytes,
			Msg: fmt.Sprintf("expression is %d bytes, expected at most %d", len(expr), MaxExprBytes)}
	}
	ps := &parser{expr: expr, p: &Policy{}}
	ps.next()
	ps.parseExpr(0)
	if ps.err == nil && ps.tok.kind != tEOF {
		ps.unexpected("end of expression")
	}
	if ps.err != nil {
		return nil, ps.err
	}
	p := ps.p
	var b strings.Builder
	p.format(&b, p.root())
	p.str = b.String()
	seen := map[string]bool{}
	for _, nd := range p.nodes {
		if nd.kind == kindPrincipal && !seen[nd.p.Org] {
			seen[nd.p.Org] = true
			p.orgs = append(p.orgs, nd.p.Org)
		}
	}
	sort.Strings(p.orgs)
	return p, nil
}

// MustParse is Parse for expressions known to be valid; it panics on error.
func MustParse(expr string) *Policy {
	p, err := Parse(expr)
	if err != nil {
		panic(err)
	}
	return p
}

func (p *Policy) root() int32 { return int32(len(p.nodes) - 1) }

// String returns the canonical form, which Parse accepts and maps to a
// policy with the same String.
func (p *Policy) String() string { return p.str }

// Orgs returns the distinct orgs the policy names, sorted.
func (p *Policy) Orgs() []string { return append([]string(nil), p.orgs...) }

func (p *Policy) format(b *strings.Builder, i int32) {
	nd := &p.nodes[i]
	switch nd.kind {
	case kindPrincipal:
		b.WriteByte('\'')
		b.WriteString(nd.p.Org)
		b.WriteByte('.')
		b.WriteString(nd.p.Role.String())
		b.WriteByte('\'')
		return
	case kindAND:
		b.WriteString("AND(")
	case kindOR:
		b.WriteString("OR(")
	case kindOutOf:
		b.WriteString("OutOf(")
		b.WriteString(strconv.Itoa(int(nd.n)))
		b.WriteByte(',')
	}
	for j, k := range p.kids[nd.first:nd.end] {
		if j > 0 {
			b.WriteByte(',')
		}
		p.format(b, k)
	}
	b.WriteByte(')')
}

// Evaluate reports whether signers satisfy the policy, with Fabric's
// cauthdsl semantics (see the package comment). Only the first 64 signers
// are considered. It allocates nothing.
func (p *Policy) Evaluate(signers []Signer) bool {
	if len(signers) > 64 {
		signers = signers[:64]
	}
	_, ok := p.eval(p.root(), signers, 0)
	return ok
}

// eval evaluates node i given the signers already used (a bit per signer)
// and returns the used set after it, which the caller commits only when ok.
func (p *Policy) eval(i int32, signers []Signer, used uint64) (uint64, bool) {
	nd := &p.nodes[i]
	if nd.kind == kindPrincipal {
		for j := range signers {
			bit := uint64(1) << uint(j)
			if used&bit != 0 {
				continue
			}
			s := &signers[j]
			if s.Org == nd.p.Org && (nd.p.Role == identity.RoleMember || s.Role == nd.p.Role) {
				return used | bit, true
			}
		}
		return used, false
	}
	count := int32(0)
	for _, k := range p.kids[nd.first:nd.end] {
		if u, ok := p.eval(k, signers, used); ok {
			used = u
			count++
		}
	}
	return used, count >= nd.n
}
