package endorser

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// DefaultTimeout bounds one simulation when Config.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// DefaultMaxOverdue is Config.MaxOverdue's default.
const DefaultMaxOverdue = 4

// State is committed state as the endorser reads it. statedb.DB satisfies
// it. A State that also has statedb.DB's GetMany method is used for
// Stub.GetMultipleStates.
type State interface {
	Get(ns, key string) (statedb.Value, bool, error)
	Scan(ns, start, end string, fn func(key string, v statedb.Value) bool) error
}

// manyGetter is the optional batched lookup of statedb.DB.
type manyGetter interface {
	GetMany(keys []statedb.Key, out []statedb.Result) error
}

// Config configures an Endorser. Every field is required except
// Definitions, Height, Timeout, MaxOverdue and Clock.
type Config struct {
	// Channel is the channel this endorser serves; proposals for any other
	// channel are refused (404).
	Channel string
	// Registry validates creators and this peer's own identity.
	Registry *identity.Registry
	// Signer is this peer's identity; its role must be peer.
	Signer *identity.Signer
	// Contracts maps a contract's name, which is also its state namespace,
	// to its code.
	Contracts map[string]contract.Contract
	// Definitions, optional, maps a contract to the committed definition
	// it runs under (SetDefinitions).
	Definitions map[string]Definition
	// State is the committed state simulations read.
	State State
	// Seen reports whether a tx id is already used on the channel; see
	// SeenIn for the block store adapter.
	Seen func(txID string) (bool, error)
	// Height, if set, returns the peer's committed height; responses
	// carry it (ProposalResponse.Height) so that a gateway can tell a
	// peer behind the others from a disagreement.
	Height func() uint64
	// Synced, optional with Height, waits until the state simulations
	// read holds at least h blocks, or ctx ends (a compute node's waits on
	// its change feed). nil: Height is polled (catchUpPoll).
	Synced func(ctx context.Context, h uint64) error
	// Timeout bounds one simulation; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxOverdue bounds the calls of one contract still running after
	// their Timeout; at the bound its proposals are refused with 503 until
	// one ends (see run). Zero means DefaultMaxOverdue.
	MaxOverdue int
	// Clock is the time certificate expiry is checked against at
	// admission; nil means time.Now.
	Clock func() time.Time
}

// SeenIn adapts a tx index lookup that returns a location, such as
// (*ledger.BlockStore).TxLocation, to Config.Seen.
func SeenIn[L any](lookup func(txID string) (L, bool, error)) func(txID string) (bool, error) {
	return func(txID string) (bool, error) {
		_, ok, err := lookup(txID)
		return ok, err
	}
}

// Endorser checks, simulates and endorses proposals. It is safe for
// concurrent use.
type Endorser struct {
	channel    string
	reg        *identity.Registry
	signer     *identity.Signer
	contracts  atomic.Pointer[contractSet] // swapped whole by SetContracts
	state      State
	seen       func(string) (bool, error)
	height     func() uint64
	synced     func(ctx context.Context, h uint64) error
	timeout    time.Duration
	clock      func() time.Time
	metrics    counters
	setMu      sync.Mutex // serialises SetContracts
	maxOverdue int
}

// contractSet is the contracts an endorser runs, immutable once stored.
type contractSet struct {
	m     map[string]contract.Contract
	names string // sorted contract names, for messages
	// overdue counts, per contract, the calls still running after their
	// deadline; a contract keeps its counter across SetContracts.
	overdue map[string]*atomic.Int64
	// defs is each contract's definition (SetDefinitions): answers carry
	// its sequence (api.ProposalResponse.Sequence), endorsed read/write
	// sets its read (lifecycle.Bind).
	defs map[string]Definition
}

// Definition is the committed definition a contract runs under.
type Definition struct {
	// Sequence is the definition's sequence, which answers name.
	Sequence uint64
	// At is the version of the definition's record in state
	// (lifecycle.Definition.At): every endorsed call of the contract reads
	// it (lifecycle.Bind), so an endorsement made under this definition
	// is MVCC_READ_CONFLICT once a later one commits. nil: the record is
	// absent (a contract of the genesis channel file).
	At *api.Version
}

// New validates cfg and returns an Endorser. The peer's own identity must
// be a valid member of the registry with role peer.
func New(cfg Config) (*Endorser, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case cfg.Channel == "":
		return nil, bad("Channel is empty, expected the channel's name")
	case cfg.Registry == nil:
		return nil, bad("Registry is nil, expected the channel's organisations")
	case cfg.Signer == nil:
		return nil, bad("Signer is nil, expected this peer's identity")
	case cfg.State == nil:
		return nil, bad("State is nil, expected the committed state")
	case cfg.Seen == nil:
		return nil, bad("Seen is nil, expected a tx id lookup (see SeenIn)")
	case cfg.Timeout < 0:
		return nil, bad("Timeout is %v, expected 0 (default %v) or more", cfg.Timeout, DefaultTimeout)
	case cfg.MaxOverdue < 0:
		return nil, bad("MaxOverdue is %d, expected 0 (default %d) or more", cfg.MaxOverdue, DefaultMaxOverdue)
	}
	m, err := cfg.Registry.Member(cfg.Signer.Identity())
	if err != nil {
		return nil, bad("Signer is not a member of the channel's organisations: %v", err)
	}
	if m.Role != identity.RolePeer {
		return nil, bad("Signer %q of org %q has role %s, expected peer", m.Name, m.Org, m.Role)
	}
	e := &Endorser{
		channel: cfg.Channel, reg: cfg.Registry, signer: cfg.Signer, state: cfg.State,
		seen: cfg.Seen, height: cfg.Height, synced: cfg.Synced, timeout: cfg.Timeout, clock: cfg.Clock, maxOverdue: cfg.MaxOverdue,
	}
	if e.timeout == 0 {
		e.timeout = DefaultTimeout
	}
	if e.maxOverdue == 0 {
		e.maxOverdue = DefaultMaxOverdue
	}
	if e.clock == nil {
		e.clock = time.Now
	}
	if err := e.SetDefinitions(cfg.Contracts, cfg.Definitions); err != nil {
		return nil, err
	}
	return e, nil
}

// SetContracts replaces the contracts the endorser runs, none with a
// definition (SetDefinitions): their calls read no definition record.
func (e *Endorser) SetContracts(contracts map[string]contract.Contract) error {
	return e.SetDefinitions(contracts, nil)
}

// SetDefinitions replaces the contracts the endorser runs (a contract
// definition committed: contract/lifecycle) and their definitions: answers
// name a definition's sequence (a contract missing from defs: 0), and an
// endorsed call of a contract in defs reads its definition record at
// Definition.At. Proposals admitted before the call finish with the code
// they were admitted with, and name and read its definition.
func (e *Endorser) SetDefinitions(contracts map[string]contract.Contract, defs map[string]Definition) error {
	e.setMu.Lock()
	defer e.setMu.Unlock()
	old := e.contracts.Load()
	set := &contractSet{m: make(map[string]contract.Contract, len(contracts)), overdue: make(map[string]*atomic.Int64, len(contracts)), defs: maps.Clone(defs)}
	names := make([]string, 0, len(contracts))
	for name, c := range contracts {
		if err := api.CheckNamespace(name); err != nil {
			return fmt.Errorf("%w: Contracts: %v", ErrBadConfig, err)
		}
		if c == nil {
			return fmt.Errorf("%w: Contracts[%q] is nil, expected a contract", ErrBadConfig, name)
		}
		set.m[name] = c
		set.overdue[name] = new(atomic.Int64)
		if old != nil && old.overdue[name] != nil {
			set.overdue[name] = old.overdue[name]
		}
		names = append(names, name)
	}
	sort.Strings(names)
	set.names = strings.Join(names, ", ")
	e.contracts.Store(set)
	return nil
}

// ProcessProposal checks sp, simulates it and, if every step succeeds,
// returns status 200 with the signed ResponsePayload bytes. Otherwise the
// response has a 4xx/5xx status, a message saying why, and no
// endorsement. It never panics.
func (e *Endorser) ProcessProposal(ctx context.Context, sp *api.SignedProposal) *api.ProposalResponse {
	e.metrics.proposals.Add(1)
	var height uint64
	if e.height != nil {
		height = e.height() // before simulating: a lower bound of the state read
	}
	set := e.contracts.Load()
	resp, p, err := e.processProposal(ctx, set, sp, &height)
	var seq uint64
	if p != nil {
		seq = set.defs[p.Contract].Sequence
	}
	if err != nil {
		e.metrics.refused(err)
		return &api.ProposalResponse{Status: StatusOf(err), Message: err.Error(), Height: height, Sequence: seq}
	}
	e.metrics.endorsed.Add(1)
	resp.Height, resp.Sequence = height, seq
	return resp
}

// Sequence is the sequence of the definition of contract the endorser
// runs now (SetDefinitions); 0 if it has none.
func (e *Endorser) Sequence(contract string) uint64 {
	return e.contracts.Load().defs[contract].Sequence
}

// Evaluate runs a signed proposal as a query: the same checks as
// ProcessProposal (signature, creator, tx id, contract), the same wait
// for its MinHeight (atLeast), and the same simulation, but nothing is
// signed, since nothing will be ordered. A
// simulation that writes is refused (ErrQueryWrites): its writes would be
// silently lost. On failure StatusOf(err) is the status to report.
func (e *Endorser) Evaluate(ctx context.Context, sp *api.SignedProposal) (_ *api.ResponsePayload, err error) {
	e.metrics.proposals.Add(1)
	defer func() {
		if err != nil {
			e.metrics.refused(err)
		}
	}()
	defer recoverInto(&err)
	set := e.contracts.Load()
	p, member, c, err := e.admit(set, sp)
	if err != nil {
		return nil, err
	}
	if e.height != nil {
		if _, err := e.atLeast(ctx, sp, p, e.height()); err != nil {
			return nil, err
		}
	}
	payload, err := e.simulate(ctx, set, p, member, c, false) // nothing is ordered: no definition to bind
	if err != nil {
		return nil, err
	}
	if n, first := writes(payload.GetRwset()); n > 0 {
		return nil, refuse(ErrQueryWrites, nil, fmt.Sprintf("%s.%s writes %d key(s) (%s first): a query is evaluated without ordering, "+
			"so its writes would be lost; submit it as a transaction instead (strand invoke, or the client's Submit)", p.Contract, p.Function, n, first))
	}
	return payload, nil
}

// writes counts the keys rw writes or deletes and names the first.
func writes(rw *api.RWSet) (n int, first string) {
	for _, ns := range rw.GetNamespaces() {
		for _, w := range ns.GetWrites() {
			if n == 0 {
				first = strconv.Quote(w.GetKey())
			}
			n++
		}
	}
	return n, first
}

// processProposal endorses sp with the contracts of set. It returns the
// proposal once decoded, on failure too, so the answer can name its
// contract's sequence.
func (e *Endorser) processProposal(ctx context.Context, set *contractSet, sp *api.SignedProposal, height *uint64) (resp *api.ProposalResponse, p *api.Proposal, err error) {
	defer recoverInto(&err)
	p, member, c, err := e.admit(set, sp)
	if err != nil {
		return nil, p, err
	}
	if e.height != nil {
		if *height, err = e.atLeast(ctx, sp, p, *height); err != nil {
			return nil, p, err
		}
	}
	payload, err := e.simulate(ctx, set, p, member, c, true)
	if err != nil {
		return nil, p, err
	}
	// Bind the response to this one transaction (api.Format.CheckBinding):
	// the tx id commits the creator and nonce, the hash the input.
	payload.ProposalHash = api.ProposalHash(sp.Proposal)
	payload.Channel, payload.TxId = p.Header.Channel, p.Header.TxId
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(payload)
	if err != nil {
		return nil, p, refuse(ErrInternal, err, fmt.Sprintf("encoding response of tx %s: %v", p.Header.TxId, err))
	}
	sig, err := e.signer.Sign(raw)
	if err != nil {
		return nil, p, refuse(ErrInternal, err, fmt.Sprintf("signing response of tx %s: %v", p.Header.TxId, err))
	}
	return &api.ProposalResponse{
		Status:          http.StatusOK,
		ResponsePayload: raw,
		Endorsement:     &api.Endorsement{Endorser: e.signer.Identity(), Signature: sig},
	}, p, nil
}

// Simulate runs p's contract on committed state and returns the result
// with its read/write set and status 200. It checks what needs no
// signature: a header for this channel, a creator who is a valid member
// (any role, expiry not checked), a known contract; it does not check the
// tx id or whether it was used. ProposalHash is left empty: only the
// caller has the proposal's exact bytes. On failure StatusOf(err) is the
// status to report.
func (e *Endorser) Simulate(ctx context.Context, p *api.Proposal) (_ *api.ResponsePayload, err error) {
	defer recoverInto(&err)
	h := p.GetHeader()
	if h == nil {
		return nil, refuse(ErrBadProposal, nil, "proposal has no header, expected channel, tx id and creator")
	}
	if err := e.checkChannel(h); err != nil {
		return nil, err
	}
	member, err := e.reg.Member(h.Creator)
	if err != nil {
		return nil, refuse(ErrBadCreator, err, fmt.Sprintf("creator of tx %q: %v", h.TxId, err))
	}
	set := e.contracts.Load()
	c, err := e.lookup(set, p)
	if err != nil {
		return nil, err
	}
	return e.simulate(ctx, set, p, member, c, true)
}

// simulate runs the contract and assembles the unsigned response; with
// bind, the read/write set also reads the definition the contract of set
// runs under, if it has one (lifecycle.Bind).
func (e *Endorser) simulate(ctx context.Context, set *contractSet, p *api.Proposal, m *identity.Member, c contract.Contract, bind bool) (*api.ResponsePayload, error) {
	st := newStub(e.state, p, m)
	result, err := e.run(ctx, c, st)
	if err != nil {
		return nil, err
	}
	rw, event, err := st.finish()
	if err != nil {
		return nil, err
	}
	// A definition transaction reads nothing (lifecycle.CheckWrites); the
	// loader gives the lifecycle contract no definition, this says why.
	if d, ok := set.defs[p.Contract]; ok && bind && p.Contract != lifecycle.Namespace {
		lifecycle.Bind(rw, p.Contract, d.At)
	}
	return &api.ResponsePayload{
		Contract: p.Contract, Rwset: rw, Status: http.StatusOK, Result: result, Event: event,
	}, nil
}

// recoverInto turns a panic outside the contract (a contract's error value
// whose methods panic, say) into a 500. Admission handles arbitrary input
// without panicking; this is the last line of defence, never the plan.
func recoverInto(err *error) {
	if r := recover(); r != nil {
		*err = refuse(ErrInternal, nil, fmt.Sprintf("processing proposal: unexpected panic: %v", r))
	}
}

// Metrics returns a snapshot of the endorser's counters.
func (e *Endorser) Metrics() Metrics {
	m := e.metrics.snapshot()
	for _, n := range e.contracts.Load().overdue {
		m.Overdue += uint64(n.Load())
	}
	return m
}
