package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
	"github.com/strand-ledger/strand/internal/rpcerr"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/policy"
)

// Defaults for the zero values of Config.
const (
	DefaultTimeout         = 10 * time.Second
	DefaultEndorseAttempts = 5
	DefaultEventBuffer     = 64
	DefaultMaxInFlight     = 10000
)

// ErrBadConfig is wrapped by every error New returns.
var ErrBadConfig = errors.New("gateway: invalid config")

// Ledger is what the gateway needs of its peer: the tx index, commit
// events and the committed height. PeerLedger builds one from a block
// store and a committer.
type Ledger interface {
	TxLocation(txID string) (ledger.Location, bool, error)
	Subscribe(buffer int) *committer.Subscription
	Height() uint64
}

// Endorser is what the gateway needs of its peer's endorser: endorse a
// proposal (the local org's pool asks it through LocalEndorser), simulate
// one without signing (Evaluate), and the definition sequence it runs a
// contract at. *endorser.Endorser has it.
type Endorser interface {
	ProcessProposal(ctx context.Context, sp *api.SignedProposal) *api.ProposalResponse
	Evaluate(ctx context.Context, sp *api.SignedProposal) (*api.ResponsePayload, error)
	Sequence(contract string) uint64
}

// Config configures a Gateway. Timeout, EndorseAttempts and EventBuffer
// have defaults; Remote may be empty when no policy needs another org.
type Config struct {
	Channel  string
	LocalOrg string
	// Peer names this gateway's peer in its refusals and in the committed heights it reports
	// to the orderers with each submit (a stream-mode orderer paces its
	// blocks by them); empty means LocalOrg.
	Peer string
	// Local is this peer's endorser.
	Local Endorser
	// Pool, if set, is the local org's endorsement pool (the primary's
	// endorser and the compute nodes that share its memory tier): Endorse
	// asks it instead of Local, and Evaluate still runs on Local. Nil
	// means a pool of Local alone.
	Pool *Pool
	// Remote lists the other orgs' peers, by org, in preference order:
	// the starting set, which SetRemote replaces (the channel's
	// membership changed).
	Remote map[string][]api.EndorserClient
	// Policies maps each contract to its endorsement policy.
	Policies map[string]*policy.Policy
	// Readers, with Registry, is the channel's read policy: BlockEvents
	// serves only callers that satisfy it (caller.CheckRead). The zero
	// value checks no caller (a gateway served without TLS, in a test).
	Readers  caller.Readers
	Registry *identity.Registry
	// OrderWait is the longest an admitted transaction waits for its
	// block when nothing is lost: the channel's batch timeout in block
	// mode, zero in stream mode. The gateway resubmits a transaction that
	// seems lost (leader loss) no sooner than this plus 500 ms, and not at
	// all when that reaches half of Timeout.
	OrderWait time.Duration
	// Format is the channel's transaction format (zero means api.Format2):
	// Submit refuses a transaction whose endorsements were made for
	// another one (api.Format.CheckBinding) before it reaches an orderer.
	Format api.Format
	// Orderers in preference order; Submit fails over on error.
	Orderers []api.OrdererClient
	// OrderersNow, if set, returns the orderers to use now, in preference
	// order, instead of Orderers (a peer that adopts the orderer set of
	// config blocks). Orderers must still hold the starting set.
	OrderersNow func() []api.OrdererClient
	Ledger      Ledger
	// Blocks is the peer's block store, read by BlockEvents.
	Blocks *ledger.BlockStore
	// Timeout bounds one endorsement or submit call; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// EndorseAttempts is how many times Endorse asks, when endorsers
	// disagree or a remote peer refuses what the local peer endorsed (a
	// peer behind the others), with a backoff from 20 ms doubling; zero
	// means DefaultEndorseAttempts.
	EndorseAttempts int
	// EventBuffer is the buffer of each commit event subscription; zero
	// means DefaultEventBuffer.
	EventBuffer int
	// MaxInFlight bounds the transactions submitted through this gateway
	// and not yet committed on its peer; at the bound Endorse and Submit
	// answer 429 with a retry-after hint (backpressure from a peer that
	// falls behind). Zero means DefaultMaxInFlight.
	MaxInFlight int
	// ReportHeights has the gateway tell the preferred orderer its peer's
	// height after each commit while it submits (see heightReporter): set
	// it on a stream-mode channel, whose orderer paces blocks by them.
	ReportHeights bool
}

// EnsureDefaults fills in the zero values that have defaults.
func (c *Config) EnsureDefaults() {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.EndorseAttempts == 0 {
		c.EndorseAttempts = DefaultEndorseAttempts
	}
	if c.EventBuffer == 0 {
		c.EventBuffer = DefaultEventBuffer
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.Peer == "" {
		c.Peer = c.LocalOrg
	}
}

// Validate checks that every required field is set and sensible.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Channel == "":
		return bad("Channel is empty, expected the channel's name")
	case c.LocalOrg == "":
		return bad("LocalOrg is empty, expected this peer's org")
	case c.Local == nil:
		return bad("Local is nil, expected this peer's endorser")
	case len(c.Orderers) == 0:
		return bad("Orderers is empty, expected at least one orderer client")
	case c.Ledger == nil:
		return bad("Ledger is nil, expected the peer's ledger (see PeerLedger)")
	case c.Blocks == nil:
		return bad("Blocks is nil, expected the peer's block store")
	case c.Timeout < 0:
		return bad("Timeout is %v, expected 0 (default %v) or more", c.Timeout, DefaultTimeout)
	case c.EndorseAttempts < 0:
		return bad("EndorseAttempts is %d, expected 0 (default %d) or more", c.EndorseAttempts, DefaultEndorseAttempts)
	case c.EventBuffer < 0:
		return bad("EventBuffer is %d, expected 0 (default %d) or more", c.EventBuffer, DefaultEventBuffer)
	case c.MaxInFlight < 0:
		return bad("MaxInFlight is %d, expected 0 (default %d) or more", c.MaxInFlight, DefaultMaxInFlight)
	}
	for i, o := range c.Orderers {
		if o == nil {
			return bad("Orderers[%d] is nil, expected an orderer client", i)
		}
	}
	if c.Readers.Checks() && c.Registry == nil {
		return bad("Readers is set without a Registry to identify callers")
	}
	if !c.Format.Valid() {
		return bad("Format is %d, expected 1 or 2 (0 means 2)", int(c.Format))
	}
	if err := checkRemote(c.Remote); err != nil {
		return bad("%v", err)
	}
	return nil
}

func checkRemote(remote map[string][]api.EndorserClient) error {
	for org, peers := range remote {
		for i, p := range peers {
			if p == nil {
				return fmt.Errorf("Remote[%q][%d] is nil, expected an endorser client", org, i)
			}
		}
	}
	return nil
}

// Gateway implements api.GatewayServer. It is safe for concurrent use.
type Gateway struct {
	api.UnimplementedGatewayServer
	cfg      Config
	plans    atomic.Pointer[planSet]                         // swapped whole by SetPolicies
	remote   atomic.Pointer[map[string][]api.EndorserClient] // swapped whole by SetRemote
	metrics  counters
	waiters  waiters // CommitStatus calls waiting for their tx ids
	heights  heightReporter
	inflight *inflight // transactions submitted here, not yet committed here
	pool     *Pool     // the local org's endorsers
	// resubmits sends again the admitted transactions the ordering
	// service has most likely lost (see resubmit).
	resubmits *resubmitter
}

// New validates cfg and plans, for each contract, which orgs Endorse asks.
// It fails if a policy cannot be satisfied by one peer of each of its
// orgs. An org a plan needs but Remote has no peer of is Endorse's
// refusal, not New's: the channel's membership may bring its peers
// (SetRemote), or may have removed the org.
func New(cfg Config) (*Gateway, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, inflight: newInflight(cfg.MaxInFlight, time.Now)}
	g.remote.Store(&g.cfg.Remote)
	g.pool = cfg.Pool
	if g.pool == nil {
		g.pool = NewPool(cfg.Peer, LocalEndorser(cfg.Local), PrimaryAlways)
	}
	g.waiters.g = g
	g.heights.g = g
	g.resubmits = newResubmitter(g)
	if err := g.SetPolicies(cfg.Policies); err != nil {
		return nil, err
	}
	return g, nil
}

// SetRemote replaces the other orgs' peers Endorse asks (Config.Remote):
// a peer follows the channel's membership, adding the peers of an org a
// membership update adds and dropping those of an org it removes. A call
// in progress finishes with the peers it started with.
func (g *Gateway) SetRemote(remote map[string][]api.EndorserClient) error {
	if err := checkRemote(remote); err != nil {
		return fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	g.remote.Store(&remote)
	return nil
}

// remotes returns the other orgs' peers in use now.
func (g *Gateway) remotes() map[string][]api.EndorserClient { return *g.remote.Load() }

// planSet is, per contract, the orgs Endorse asks (local org first).
type planSet struct {
	plans    map[string][]string
	policies map[string]*policy.Policy // for messages
	names    string                    // sorted contract names, for messages
}

// SetPolicies replaces the endorsement policies Endorse plans by (a
// contract definition committed: contract/lifecycle). It fails, changing
// nothing, if a policy cannot be satisfied by one peer of each of its
// orgs.
func (g *Gateway) SetPolicies(policies map[string]*policy.Policy) error {
	set := &planSet{plans: make(map[string][]string, len(policies)), policies: policies}
	names := make([]string, 0, len(policies))
	for name, pol := range policies {
		if pol == nil {
			return fmt.Errorf("%w: Policies[%q] is nil, expected a policy", ErrBadConfig, name)
		}
		orgs, err := plan(g.cfg.LocalOrg, pol)
		if err != nil {
			return fmt.Errorf("%w: contract %q: %v", ErrBadConfig, name, err)
		}
		set.plans[name] = orgs
		names = append(names, name)
	}
	sort.Strings(names)
	set.names = strings.Join(names, ", ")
	g.plans.Store(set)
	return nil
}

// plan returns the orgs to ask: local first, then the policy's orgs in
// order, until the policy holds over one peer of each.
func plan(local string, pol *policy.Policy) ([]string, error) {
	orgs := []string{local}
	signers := []policy.Signer{{Org: local, Role: identity.RolePeer}}
	for _, org := range pol.Orgs() {
		if pol.Evaluate(signers) {
			break
		}
		if org == local {
			continue
		}
		orgs = append(orgs, org)
		signers = append(signers, policy.Signer{Org: org, Role: identity.RolePeer})
	}
	if !pol.Evaluate(signers) {
		return nil, fmt.Errorf("policy %s is not satisfied by one peer of each of %v; the gateway asks one peer per org", pol, orgs)
	}
	return orgs, nil
}

// Evaluate runs a query on this peer's endorser, with every admission
// check of an endorsement (signature included), and returns its result.
// Nothing is ordered.
func (g *Gateway) Evaluate(ctx context.Context, sp *api.SignedProposal) (*api.EvaluateResponse, error) {
	g.metrics.evaluate.Add(1)
	cctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	rp, err := g.cfg.Local.Evaluate(cctx, sp)
	if err != nil {
		g.metrics.evaluateRefused.Add(1)
		return &api.EvaluateResponse{Status: endorser.StatusOf(err), Message: err.Error()}, nil
	}
	return &api.EvaluateResponse{Status: http.StatusOK, Result: rp.Result}, nil
}

// Submit forwards a signed transaction to the orderers in preference
// order. A transport error or a 503 moves on to the next orderer; when
// every orderer answers 503 (a Raft election), it asks again with a
// backoff for up to Config.Timeout; any other answer is passed through.
// Once admitted, the transaction is watched until it commits on this
// peer, and sent again if the ordering service lost it (resubmit).
func (g *Gateway) Submit(ctx context.Context, req *api.SubmitRequest) (*api.SubmitResponse, error) {
	g.metrics.submit.Add(1)
	tx, _, err := api.DecodeTx(req.GetTransaction())
	if err != nil {
		g.metrics.submitRefused.Add(1)
		return &api.SubmitResponse{Status: http.StatusBadRequest,
			Message: fmt.Sprintf("gateway: transaction of %d bytes is malformed: %v", len(req.GetTransaction()), err)}, nil
	}
	if ch := tx.Payload.GetHeader().GetChannel(); ch != g.cfg.Channel {
		g.metrics.submitRefused.Add(1)
		return &api.SubmitResponse{Status: http.StatusNotFound,
			Message: fmt.Sprintf("%v: transaction %s is for channel %q, this gateway serves channel %q", ErrWrongChannel, tx.ID(), ch, g.cfg.Channel)}, nil
	}
	if err := g.cfg.Format.CheckBinding(tx); err != nil {
		g.metrics.submitRefused.Add(1)
		return &api.SubmitResponse{Status: http.StatusBadRequest, Message: "gateway: " + err.Error()}, nil
	}
	if ok, wait := g.inflight.add(tx.ID()); !ok {
		g.metrics.submitRefused.Add(1)
		msg, ms := g.overloaded(wait)
		return &api.SubmitResponse{Status: http.StatusTooManyRequests, Message: msg, RetryAfterMs: ms}, nil
	}
	g.waiters.start() // its dispatcher removes committed ids from inflight and resubmits
	g.resubmits.sending(tx.ID(), req.GetTransaction())
	start := time.Now()
	r := g.submitRetrying(ctx, req, tx.ID())
	if r.Status != http.StatusOK {
		g.inflight.drop(tx.ID())
		g.resubmits.refused(tx.ID())
		return r, nil
	}
	g.metrics.orderLatency.Since(start)
	g.resubmits.admitted(tx.ID())
	if req.GetWaitCommit() {
		r.AdmittedUs = uint64(time.Since(start).Microseconds())
		cs, err := g.CommitStatus(ctx, &api.CommitStatusRequest{TxId: tx.ID(), Channel: g.cfg.Channel})
		if err != nil {
			return nil, err
		}
		r.Commit = cs
	}
	return r, nil
}

// overloaded is the message and retry hint of a 429 answer.
func (g *Gateway) overloaded(wait time.Duration) (string, uint32) {
	g.metrics.overloaded.Add(1)
	ms := uint32(wait.Milliseconds())
	return fmt.Sprintf("gateway: overloaded: %d transactions submitted through this peer (org %s) are not yet committed on it (the bound is %d); retry after %d ms",
		g.inflight.count(), g.cfg.LocalOrg, g.cfg.MaxInFlight, ms), ms
}

// submitRetrying submits until an orderer answers other than 503, for up
// to Config.Timeout: every orderer answers 503 while a Raft cluster elects
// a leader, which takes about an election timeout (1 s by default).
func (g *Gateway) submitRetrying(ctx context.Context, req *api.SubmitRequest, id string) *api.SubmitResponse {
	deadline := time.Now().Add(g.cfg.Timeout)
	backoff := 20 * time.Millisecond
	for {
		r := g.submit(ctx, req, id)
		if r.Status != http.StatusServiceUnavailable || time.Now().Add(backoff).After(deadline) {
			return r
		}
		g.metrics.submitRetried.Add(1)
		select {
		case <-ctx.Done():
			return r
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// submit forwards req to the orderers, once; see Submit.
func (g *Gateway) submit(ctx context.Context, req *api.SubmitRequest, id string) *api.SubmitResponse {
	var failures []string
	orderers := g.cfg.Orderers
	if g.cfg.OrderersNow != nil {
		orderers = g.cfg.OrderersNow()
	}
	req = &api.SubmitRequest{Transaction: req.GetTransaction(), Peer: g.cfg.Peer, PeerHeight: g.cfg.Ledger.Height()}
	g.heights.submitted(time.Now())
	for i, o := range orderers {
		if i > 0 {
			g.metrics.submitFailover.Add(1)
		}
		cctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
		r, err := o.Submit(cctx, req)
		cancel()
		switch {
		case err != nil:
			failures = append(failures, fmt.Sprintf("%s: %s", ordererName(i, o), rpcerr.Short(err)))
		case r.Status == http.StatusServiceUnavailable:
			// The tx is named once, below.
			failures = append(failures, fmt.Sprintf("%s: 503 %s", ordererName(i, o), strings.ReplaceAll(r.Message, "tx "+id+": ", "")))
		default:
			if r.Status != http.StatusOK {
				g.metrics.submitRefused.Add(1)
			}
			return r
		}
		if ctx.Err() != nil {
			break
		}
	}
	g.metrics.submitRefused.Add(1)
	return &api.SubmitResponse{Status: http.StatusServiceUnavailable,
		Message: fmt.Sprintf("gateway: no orderer admitted tx %s (%s); submit it again later", id, strings.Join(failures, "; "))}
}

// ordererName names orderer i, with its name when it has one (see
// NamedOrderer).
func ordererName(i int, o any) string {
	if s, ok := o.(fmt.Stringer); ok {
		return "orderer " + s.String()
	}
	return fmt.Sprintf("orderer #%d", i)
}

// Pool returns the local org's endorsement pool (Config.Pool, or the one
// New made of Local).
func (g *Gateway) Pool() *Pool { return g.pool }

// Metrics returns a snapshot of the gateway's counters.
func (g *Gateway) Metrics() Metrics {
	m := g.metrics.snapshot()
	m.InFlight = uint64(g.inflight.count())
	return m
}
