package gateway

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/internal/rpcerr"
)

// answer is one org's reply to an endorsement request.
type answer struct {
	org  string
	peer string // names the peer that answered (or failed last)
	idx  int    // a remote answer: the index in Remote[org] of the peer that answered
	resp *api.ProposalResponse
	err  error // the org's peers all failed to answer
}

// Endorse gathers the endorsements the contract's policy needs and returns
// the TxPayload for the client to sign. See the package comment for the
// order in which orgs are asked and what makes an answer acceptable.
func (g *Gateway) Endorse(ctx context.Context, sp *api.SignedProposal) (resp *api.EndorseResponse, _ error) {
	g.metrics.endorse.Add(1)
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			resp = refusal(http.StatusInternalServerError, "gateway: endorsing: unexpected panic: %v", r)
		}
		if resp.Status == http.StatusServiceUnavailable && resp.RetryAfterMs == 0 {
			// Every 503 here may pass: no endorser answered, or the
			// shared memory tier did not (see the client's retry path).
			resp.RetryAfterMs = uint32(unavailableRetry.Milliseconds())
		}
		if resp.Status != http.StatusOK {
			g.metrics.endorseRefused.Add(1)
		} else {
			g.metrics.endorseLatency.Since(start)
		}
	}()
	if sp == nil || len(sp.Proposal) == 0 {
		return refusal(http.StatusBadRequest, "gateway: signed proposal has no proposal bytes"), nil
	}
	// Refuse before simulating and signing: the work would only queue.
	if full, wait := g.inflight.full(); full {
		msg, ms := g.overloaded(wait)
		return &api.EndorseResponse{Status: http.StatusTooManyRequests, Message: msg, RetryAfterMs: ms}, nil
	}
	p := new(api.Proposal)
	if err := proto.Unmarshal(sp.Proposal, p); err != nil {
		return refusal(http.StatusBadRequest, "gateway: proposal of %d bytes does not decode: %v", len(sp.Proposal), err), nil
	}
	if p.Header == nil {
		return refusal(http.StatusBadRequest, "gateway: proposal has no header, expected channel, tx id and creator"), nil
	}
	plans := g.plans.Load()
	orgs, ok := plans.plans[p.Contract]
	if !ok {
		return refusal(http.StatusNotFound, "gateway: contract %q has no endorsement policy on channel %q, expected one of: %s",
			p.Contract, g.cfg.Channel, plans.names), nil
	}
	// An org the plan needs without a known peer is refused at once,
	// not as a 503 a client retries: only a membership update changes it.
	peers := g.remotes()
	for _, org := range orgs[1:] {
		if len(peers[org]) == 0 {
			return refusal(http.StatusPreconditionFailed, "gateway: contract %q needs an endorsement of org %s (policy %s), but this gateway knows no peer of org %s: "+
				"it is not a member of channel %q, or neither the channel file nor the membership update that added it names its peers",
				p.Contract, org, plans.policies[p.Contract], org, g.cfg.Channel), nil
		}
	}
	if g.pool.Compute() {
		// Compute nodes have no block store: the primary's tx index
		// refuses a used tx id here, as its own endorser would.
		if _, used, err := g.cfg.Ledger.TxLocation(p.Header.TxId); err != nil {
			return refusal(http.StatusInternalServerError, "gateway: looking up tx id %s: %v", p.Header.TxId, err), nil
		} else if used {
			return refusal(http.StatusConflict, "gateway: tx id %s is already used; build a new proposal with a new nonce", p.Header.TxId), nil
		}
	}
	// Only the local org's pool is asked for this peer's height: the
	// primary is never behind it, and a compute node reading through a
	// feed may be. Another org's peer behind by a block the transaction
	// reads disagrees with a fresh local answer, which the height logic
	// below waits out; were it asked too, every proposal would wait for
	// the other org's commit of the block just committed here, whether
	// or not it reads what that block wrote (a closed loop's throughput
	// fell by about 15% on a processes network). What a client asks for
	// (MinHeight, Contract.After) goes to every endorser.
	local := withMinHeight(sp, g.cfg.Ledger.Height())
	rt := newRetry(start, g.cfg.Timeout, g.cfg.EndorseAttempts)
	var routes map[string]*route // orgs with a remote peer found behind
	for {
		answers := g.gather(ctx, local, sp, p.Contract, peers, orgs, routes)
		r, remote := g.firstRefusal(p.Header.TxId, answers)
		if r == nil {
			err := agree(answers)
			if err == nil {
				return g.assemble(p, answers), nil
			}
			r = refusal(http.StatusInternalServerError, "gateway: tx %s: %v (after %d attempts; the peers may be at different heights, try again)",
				p.Header.TxId, err, rt.attempt)
		} else if !remote {
			return r, nil
		}
		// The endorsers disagree, or a remote peer refused what the local
		// peer endorsed: ask another peer of an org found behind at once,
		// else do what retry decides (retry.go).
		local, lo, hi := heights(answers)
		if lo < hi && routeAround(peers, answers, hi, &routes) {
			g.metrics.endorseRetried.Add(1)
			continue // another peer of the org behind, at once
		}
		st := rt.next(time.Now(), local, lo, hi)
		if st.kind == giveUp {
			return r, nil
		}
		g.metrics.endorseRetried.Add(1)
		var err error
		if st.kind == awaitHeight {
			err = g.awaitHeight(ctx, st.height, st.until)
		} else {
			err = sleep(ctx, st.wait)
		}
		if err != nil {
			return refusal(http.StatusGatewayTimeout, "gateway: the request ended (%v) before the peers agreed (heights %d to %d); last answer: %s", err, lo, hi, r.Message), nil
		}
	}
}

// withMinHeight returns sp asking its endorser for state of at least
// height blocks (the gateway's peer's height when it came), or sp itself
// if it asks for as much already: a client whose transaction this gateway
// reported committed reads its writes in its next proposal at a compute
// node too (api.SignedProposal.MinHeight).
func withMinHeight(sp *api.SignedProposal, height uint64) *api.SignedProposal {
	if sp.GetMinHeight() >= height {
		return sp
	}
	return &api.SignedProposal{Proposal: sp.Proposal, Signature: sp.Signature, Channel: sp.Channel, MinHeight: height}
}

// unavailableRetry is the retry hint of a 503 Endorse answer: about the
// time a gateway takes to notice a dead compute node, or a memory node to
// listen again.
const unavailableRetry = 100 * time.Millisecond

// sleep waits d, or until ctx ends and returns its error.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// route is where one Endorse call asks an org's remote peers first, once
// one of them answered from a height below the others'.
type route struct {
	first int // the peer to ask first
	start int // the first peer found behind: coming back to it ends the tour
}

func (r *route) from() int {
	if r == nil {
		return 0
	}
	return r.first
}

// routeAround moves every org whose remote answer is below height hi on
// to its next peer, unless that would come back to the peer first found
// behind (then Endorse waits instead). It reports whether it moved any.
func routeAround(remote map[string][]api.EndorserClient, answers []answer, hi uint64, routes *map[string]*route) bool {
	moved := false
	for _, a := range answers[1:] {
		n := len(remote[a.org])
		if a.resp == nil || a.resp.Height == 0 || a.resp.Height >= hi || n < 2 {
			continue
		}
		if *routes == nil {
			*routes = map[string]*route{}
		}
		r := (*routes)[a.org]
		if r == nil {
			r = &route{start: a.idx}
			(*routes)[a.org] = r
		}
		next := (a.idx + 1) % n
		if next == r.start {
			continue
		}
		r.first = next
		moved = true
	}
	return moved
}

// maxCatchUpPoll bounds the wait between asks while a remote peer catches
// up.
const maxCatchUpPoll = 100 * time.Millisecond

// heights returns the local peer's height and the lowest and highest
// heights the answers report; peers that do not say (0) are left out, and
// lo == hi when fewer than two say.
func heights(answers []answer) (local, lo, hi uint64) {
	for i, a := range answers {
		if a.resp == nil || a.resp.Height == 0 {
			continue
		}
		h := a.resp.Height
		if i == 0 {
			local = h
		}
		if lo == 0 || h < lo {
			lo = h
		}
		hi = max(hi, h)
	}
	return local, lo, hi
}

// awaitHeight waits until the local peer has committed height blocks, the
// deadline passes (which is not an error: the caller asks again and
// counts the attempt) or ctx ends.
func (g *Gateway) awaitHeight(ctx context.Context, height uint64, deadline time.Time) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for g.cfg.Ledger.Height() < height && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

func refusal(status int32, format string, args ...any) *api.EndorseResponse {
	return &api.EndorseResponse{Status: status, Message: fmt.Sprintf(format, args...)}
}

// gather asks every org in parallel and returns their answers in orgs'
// order: the local org's pool local, the other orgs' peers sp. The local
// peer (orgs[0]) is asked on this goroutine, whose stack has already
// grown, while the remote calls wait on goroutines of their own.
func (g *Gateway) gather(ctx context.Context, local, sp *api.SignedProposal, contract string, remote map[string][]api.EndorserClient, orgs []string, routes map[string]*route) []answer {
	answers := make([]answer, len(orgs))
	var wg sync.WaitGroup
	for i, org := range orgs[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i+1] = g.askRemote(ctx, sp, org, remote[org], routes[org].from())
		}()
	}
	answers[0] = g.askLocal(ctx, local, contract)
	wg.Wait()
	return answers
}

// askLocal asks the local org's pool: the primary's endorser or one of
// its compute nodes running the primary's definition of contract.
func (g *Gateway) askLocal(ctx context.Context, sp *api.SignedProposal, contract string) answer {
	cctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	name, r, err := g.pool.ask(cctx, sp, contract)
	if err != nil {
		return answer{org: g.cfg.LocalOrg, peer: "the endorsers of org " + g.cfg.LocalOrg, err: err}
	}
	who := "the local peer of org " + g.cfg.LocalOrg
	switch {
	case name != g.cfg.Peer:
		who = fmt.Sprintf("compute node %s of peer %s of org %s", name, g.cfg.Peer, g.cfg.LocalOrg)
	case g.cfg.Peer != g.cfg.LocalOrg: // named (EnsureDefaults sets LocalOrg otherwise)
		who = fmt.Sprintf("peer %s of org %s", g.cfg.Peer, g.cfg.LocalOrg)
	}
	return answer{org: g.cfg.LocalOrg, peer: who, resp: r}
}

// askRemote asks org's peers in preference order, from peer first on and
// around, until one answers.
func (g *Gateway) askRemote(ctx context.Context, sp *api.SignedProposal, org string, peers []api.EndorserClient, first int) answer {
	var failures []string
	for k := range peers {
		if k > 0 {
			g.metrics.endorseFailover.Add(1)
		}
		i := (first + k) % len(peers)
		c := peers[i]
		name := peerName(org, i, c)
		cctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
		r, err := c.ProcessProposal(cctx, sp)
		cancel()
		if err == nil {
			return answer{org: org, peer: name, idx: i, resp: r}
		}
		failures = append(failures, fmt.Sprintf("%s: %s", name, rpcerr.Short(err)))
		if ctx.Err() != nil {
			break
		}
	}
	return answer{org: org, peer: fmt.Sprintf("the peers of org %s", org),
		err: fmt.Errorf("no peer of org %s answered (%s)", org, strings.Join(failures, "; "))}
}

// peerName names remote peer i of org, with its name when it has one
// (see NamedEndorser).
func peerName(org string, i int, c any) string {
	if s, ok := c.(fmt.Stringer); ok {
		return fmt.Sprintf("peer %s of org %s", s.String(), org)
	}
	return fmt.Sprintf("peer #%d of org %s", i, org)
}

// firstRefusal returns the response for the first org, in asking order,
// that did not endorse, or nil if all did. remote is true when that is a
// remote peer's refusal of a proposal the local peer endorsed.
func (g *Gateway) firstRefusal(txID string, answers []answer) (_ *api.EndorseResponse, remote bool) {
	for i, a := range answers {
		switch {
		case a.err != nil:
			return refusal(http.StatusServiceUnavailable, "gateway: %v; try again later", a.err), false
		case a.resp == nil:
			return refusal(http.StatusInternalServerError, "gateway: tx %s: %s answered with no response", txID, a.peer), false
		case a.resp.Status != http.StatusOK:
			// The endorser's reason first: the client names the tx.
			return refusal(a.resp.Status, "%s; refused by %s", a.resp.Message, a.peer), i > 0
		case a.resp.Endorsement == nil || a.resp.Endorsement.Endorser == nil || len(a.resp.ResponsePayload) == 0:
			return refusal(http.StatusInternalServerError, "gateway: tx %s: %s answered 200 without an endorsement or response payload", txID, a.peer), false
		case a.resp.Endorsement.Endorser.Org != a.org:
			return refusal(http.StatusInternalServerError, "gateway: tx %s: %s endorsed as org %q, expected org %q; check the gateway's Remote config",
				txID, a.peer, a.resp.Endorsement.Endorser.Org, a.org), false
		}
	}
	return nil, false
}

// agree checks that every endorser signed the same ResponsePayload bytes.
func agree(answers []answer) error {
	first := answers[0]
	for _, a := range answers[1:] {
		if !bytes.Equal(a.resp.ResponsePayload, first.resp.ResponsePayload) {
			return fmt.Errorf("endorsers disagree: %s and %s returned different response payloads (%d and %d bytes): %s",
				first.peer, a.peer, len(first.resp.ResponsePayload), len(a.resp.ResponsePayload),
				difference(first.resp.ResponsePayload, a.resp.ResponsePayload))
		}
	}
	return nil
}

// assemble builds the TxPayload from the proposal and the agreed answers.
func (g *Gateway) assemble(p *api.Proposal, answers []answer) *api.EndorseResponse {
	rp, err := api.DecodeResponsePayload(answers[0].resp.ResponsePayload)
	if err != nil {
		return refusal(http.StatusInternalServerError, "gateway: tx %s: response payload of %s does not decode: %v", p.Header.TxId, answers[0].peer, err)
	}
	if rp.TxId != p.Header.TxId || rp.Channel != p.Header.Channel {
		return refusal(http.StatusBadGateway, "gateway: tx %s: %s answered with a response for tx %q on channel %q; endorsers must answer the proposal they were sent",
			p.Header.TxId, answers[0].peer, rp.TxId, rp.Channel)
	}
	tp := &api.TxPayload{Header: p.Header, Contract: p.Contract, ResponsePayload: answers[0].resp.ResponsePayload}
	for _, a := range answers {
		tp.Endorsements = append(tp.Endorsements, a.resp.Endorsement)
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(tp)
	if err != nil {
		return refusal(http.StatusInternalServerError, "gateway: tx %s: encoding the transaction payload: %v", p.Header.TxId, err)
	}
	return &api.EndorseResponse{Status: http.StatusOK, Result: rp.Result, Payload: raw}
}
