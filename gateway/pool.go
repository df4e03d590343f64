package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/internal/rpcerr"
)

// ProposalEndorser is what the pool asks: api.EndorserClient has it, and
// LocalEndorser adapts the primary's own endorser.
type ProposalEndorser interface {
	ProcessProposal(ctx context.Context, sp *api.SignedProposal, opts ...grpc.CallOption) (*api.ProposalResponse, error)
}

// LocalEndorser adapts an in-process endorser to ProposalEndorser; it never
// fails at the transport.
func LocalEndorser(e Endorser) ProposalEndorser { return localEndorser{e} }

type localEndorser struct{ e Endorser }

func (l localEndorser) ProcessProposal(ctx context.Context, sp *api.SignedProposal, _ ...grpc.CallOption) (*api.ProposalResponse, error) {
	return l.e.ProcessProposal(ctx, sp), nil
}

func (l localEndorser) Sequence(contract string) uint64 { return l.e.Sequence(contract) }

// sequencer is the optional capability of a primary's endorser to say
// which definition of a contract it runs (LocalEndorser has it).
type sequencer interface {
	Sequence(contract string) uint64
}

// PrimaryMode says when the primary's own endorser is in its pool.
type PrimaryMode int

const (
	// PrimaryFallback: the primary endorses only while no compute node is
	// in the pool, and as the last resort when every compute node failed
	// to answer. FlexChain's primary validates and commits and leaves
	// endorsement to its compute nodes; the fallback keeps a logical peer
	// without compute nodes (or with all of them dead) endorsing.
	PrimaryFallback PrimaryMode = iota
	// PrimaryAlways keeps the primary in the pool as one more member.
	PrimaryAlways
)

// ErrMember is wrapped by Pool.Add's refusals.
var ErrMember = errors.New("gateway: pool member refused")

// Pool is the local org's side of a logical peer (FlexChain §4): the
// endorsers that share the primary's memory tier, the primary's own and
// those of the compute nodes in the pool, over which Endorse spreads the
// local org's endorsement. It is safe for concurrent use.
//
// Choice: the member with the fewest proposals this gateway has in flight
// on it, ties going round-robin (the scan starts one member further each
// time). The counts are compared and raised under one lock, so callers
// that arrive together spread over the members.
//
// Failure: a transport error (the member did not answer: it died, or its
// connection broke) asks the next member not yet tried, so a compute node
// that dies costs a proposal in flight on it a second ask, not a refusal.
// An answer, whatever its status, is the answer: the members read the same
// memory tier, so a 503 from it would be the same anywhere. Only when every
// member failed does ask return an error, which names each.
//
// Definitions: a compute node installs a contract's new definition when
// its memory node's change feed brings it, which may be before or after
// the primary installs it from its committer. An answer of a compute node
// names the definition's sequence it ran (api.ProposalResponse.Sequence);
// one that is not the sequence the primary's endorser runs (sequencer) is
// stale: it is counted and the next member asked, the primary last, as
// for a transport failure. So the local org's endorsement is always made
// with the primary's definition, and agrees with what the primary (and
// other orgs' peers at its height) would have answered.
type Pool struct {
	primary *member
	seq     sequencer // nil: answers are not checked
	mode    PrimaryMode
	mu      struct {
		sync.Mutex
		members []*member // in joining order; the primary first with PrimaryAlways
		next    int       // where the next scan starts
	}
	joins, leaves, failovers, stale atomic.Uint64
}

type member struct {
	name     string
	compute  bool
	e        ProposalEndorser
	inflight atomic.Int64 // written under Pool.mu when raised
	served   atomic.Uint64
	failed   atomic.Uint64
	stale    atomic.Uint64
}

// NewPool returns the pool of a primary named name whose own endorser is e.
func NewPool(name string, e ProposalEndorser, mode PrimaryMode) *Pool {
	p := &Pool{primary: &member{name: name, e: e}, mode: mode}
	p.seq, _ = e.(sequencer)
	if mode == PrimaryAlways {
		p.mu.members = []*member{p.primary}
	}
	return p
}

// Add puts a compute node in the pool until the returned remove is called
// (its Join stream ended). A name already in the pool is refused: two
// processes may not pose as one member.
func (p *Pool) Add(name string, e ProposalEndorser) (remove func(), err error) {
	if name == "" || e == nil {
		return nil, fmt.Errorf("%w: compute node %q with endorser %v: want a name and an endorser", ErrMember, name, e)
	}
	m := &member{name: name, compute: true, e: e}
	p.mu.Lock()
	defer p.mu.Unlock()
	if name == p.primary.name || slices.ContainsFunc(p.mu.members, func(o *member) bool { return o.name == name }) {
		return nil, fmt.Errorf("%w: %q is already a member of %s's pool (members: %s)", ErrMember, name, p.primary.name, p.namesLocked())
	}
	p.mu.members = append(p.mu.members, m)
	p.joins.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.mu.members = slices.DeleteFunc(p.mu.members, func(o *member) bool { return o == m })
			p.leaves.Add(1)
		})
	}, nil
}

// Members returns the names of the pool's members now, in joining order;
// with PrimaryFallback the primary is listed last when no compute node is.
func (p *Pool) Members() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.mu.members)+1)
	for _, m := range p.mu.members {
		out = append(out, m.name)
	}
	if p.mode == PrimaryFallback && len(p.mu.members) == 0 {
		out = append(out, p.primary.name)
	}
	return out
}

// Compute reports whether a compute node is in the pool.
func (p *Pool) Compute() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.mu.members, func(m *member) bool { return m.compute })
}

func (p *Pool) namesLocked() string {
	names := make([]string, len(p.mu.members))
	for i, m := range p.mu.members {
		names[i] = m.name
	}
	if len(names) == 0 {
		return "none but the primary"
	}
	return strings.Join(names, ", ")
}

// pick chooses the least-loaded member not in tried and counts a
// proposal in flight on it; nil when every member was tried. The primary
// is the fallback after the members (PrimaryFallback).
func (p *Pool) pick(tried []*member) *member {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.mu.members)
	var best *member
	for k := range n {
		m := p.mu.members[(p.mu.next+k)%n]
		if !slices.Contains(tried, m) && (best == nil || m.inflight.Load() < best.inflight.Load()) {
			best = m
		}
	}
	if n > 0 {
		p.mu.next = (p.mu.next + 1) % n
	}
	if best == nil && p.mode == PrimaryFallback && !slices.Contains(tried, p.primary) {
		best = p.primary
	}
	if best != nil {
		best.inflight.Add(1)
	}
	return best
}

// ask has a member endorse sp, a proposal of contract, failing over as
// the type's comment says. It returns the answering member's name and
// answer, or an error naming every member that failed.
func (p *Pool) ask(ctx context.Context, sp *api.SignedProposal, contract string) (string, *api.ProposalResponse, error) {
	var tried []*member
	var failures []string
	for {
		m := p.pick(tried)
		if m == nil {
			if len(failures) == 0 {
				return "", nil, fmt.Errorf("the pool of %s has no member", p.primary.name)
			}
			return "", nil, fmt.Errorf("no endorser of %s's pool answered (%s)", p.primary.name, strings.Join(failures, "; "))
		}
		r, err := m.e.ProcessProposal(ctx, sp)
		m.inflight.Add(-1)
		if err == nil && m.compute && p.seq != nil {
			if want := p.seq.Sequence(contract); r.GetSequence() != want {
				m.stale.Add(1)
				p.stale.Add(1)
				tried = append(tried, m)
				failures = append(failures, fmt.Sprintf("%s: ran definition sequence %d of contract %q, the primary runs %d",
					m.name, r.GetSequence(), contract, want))
				continue
			}
		}
		if err == nil {
			m.served.Add(1)
			return m.name, r, nil
		}
		m.failed.Add(1)
		p.failovers.Add(1)
		tried = append(tried, m)
		failures = append(failures, fmt.Sprintf("%s: %s", m.name, rpcerr.Short(err)))
		if ctx.Err() != nil {
			return "", nil, fmt.Errorf("the request ended (%v) while asking %s's pool (%s)", ctx.Err(), p.primary.name, strings.Join(failures, "; "))
		}
	}
}

// PoolMetrics is a snapshot of a pool. The maps are keyed by member name;
// a member that left is no longer listed.
type PoolMetrics struct {
	Members int    `metric:"gauge"`   // members now, the primary included when it endorses
	Joins   uint64 `metric:"counter"` // compute nodes added
	Leaves  uint64 `metric:"counter"` // compute nodes removed (their Join stream ended)
	// Failovers counts the asks that failed at the transport, members
	// since gone included: each cost its proposal an ask of another member.
	Failovers uint64 `metric:"counter"`
	// Stale counts the answers refused because the compute node ran
	// another definition of the contract than the primary's (it had not
	// installed the primary's yet, or installed a newer one first).
	Stale    uint64            `metric:"counter"`
	InFlight map[string]int64  `metric:"gauge,key=member"`   // proposals this gateway has in flight on each member
	Served   map[string]uint64 `metric:"counter,key=member"` // proposals each member answered
	Failed   map[string]uint64 `metric:"counter,key=member"` // asks that failed at the transport
	// StaleBy is Stale by member.
	StaleBy map[string]uint64 `metric:"counter,key=member"`
}

// String formats the snapshot on one line, members sorted by name.
func (m PoolMetrics) String() string {
	names := make([]string, 0, len(m.InFlight))
	for n := range m.InFlight {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "pool: %d members, %d joins, %d leaves, %d failovers, %d stale", m.Members, m.Joins, m.Leaves, m.Failovers, m.Stale)
	for _, n := range names {
		fmt.Fprintf(&b, "; %s in-flight %d served %d failed %d stale %d", n, m.InFlight[n], m.Served[n], m.Failed[n], m.StaleBy[n])
	}
	return b.String()
}

// Metrics returns a snapshot of the pool.
func (p *Pool) Metrics() PoolMetrics {
	p.mu.Lock()
	ms := slices.Clone(p.mu.members)
	p.mu.Unlock()
	if !slices.Contains(ms, p.primary) {
		ms = append(ms, p.primary) // it answers as the fallback
	}
	out := PoolMetrics{Joins: p.joins.Load(), Leaves: p.leaves.Load(), Failovers: p.failovers.Load(), Stale: p.stale.Load(), Members: len(p.Members()),
		InFlight: map[string]int64{}, Served: map[string]uint64{}, Failed: map[string]uint64{}, StaleBy: map[string]uint64{}}
	for _, m := range ms {
		out.InFlight[m.name], out.Served[m.name], out.Failed[m.name], out.StaleBy[m.name] = m.inflight.Load(), m.served.Load(), m.failed.Load(), m.stale.Load()
	}
	return out
}
