package endorser

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/identity"
)

func TestExpiredCreator(t *testing.T) {
	f := newFixture(t)
	m, err := f.reg.Member(f.client.Identity())
	if err != nil {
		t.Fatal(err)
	}
	now := m.NotAfter
	f.clock = func() time.Time { return now }
	e := f.newEndorser(t, f.peer1)
	sp := sign(t, proposal(t, f.client, testChannel, testNS, "do"), f.client)
	if resp := e.ProcessProposal(t.Context(), sp); resp.Status != 200 {
		t.Fatalf("at NotAfter: status %d (%s), want 200", resp.Status, resp.Message)
	}
	now = m.NotAfter.Add(time.Second)
	sp = sign(t, proposal(t, f.client, testChannel, testNS, "do"), f.client)
	checkRefused(t, e.ProcessProposal(t.Context(), sp), 403, "expired", "alice")
	if got := e.Metrics().Expired; got != 1 {
		t.Fatalf("Expired metric %d, want 1", got)
	}
}

func TestStateErrorsFailTheCall(t *testing.T) {
	f := newFixture(t)
	f.state = failingState{}
	e := f.newEndorser(t, f.peer1)
	for _, fn := range []string{"swallow", "do"} {
		args := []string{"range", "a", "b", "0", ""}
		if fn == "swallow" {
			args = nil
		}
		sp := sign(t, proposal(t, f.client, testChannel, testNS, fn, args...), f.client)
		checkRefused(t, e.ProcessProposal(t.Context(), sp), 500, "reading state", "disk read error")
	}
	if got := e.Metrics().Internal; got != 2 {
		t.Fatalf("Internal metric %d, want 2", got)
	}
}

// TestStateUnavailableIsRetryable: a state database that does not answer
// (statedb.ErrUnavailable) or lost state (statedb.ErrStateLost) refuses
// with 503 naming ErrStateUnavailable, counted as StateUnavailable.
func TestStateUnavailableIsRetryable(t *testing.T) {
	f := newFixture(t)
	f.state = downState{}
	e := f.newEndorser(t, f.peer1)
	for _, fn := range []string{"swallow", "do"} {
		var args []string
		if fn == "do" {
			args = []string{"range", "a", "b", "0", ""}
		}
		sp := sign(t, proposal(t, f.client, testChannel, testNS, fn, args...), f.client)
		checkRefused(t, e.ProcessProposal(t.Context(), sp), 503, "state unavailable", "try again")
	}
	if m := e.Metrics(); m.StateUnavailable != 2 || m.Internal != 0 {
		t.Fatalf("StateUnavailable %d and Internal %d, want 2 and 0", m.StateUnavailable, m.Internal)
	}
}

func TestSeen(t *testing.T) {
	f := newFixture(t)
	cfg := f.config(f.peer1)
	cfg.Seen = func(string) (bool, error) { return false, errors.New("index unreadable") }
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sp := sign(t, proposal(t, f.client, testChannel, testNS, "do"), f.client)
	checkRefused(t, e.ProcessProposal(t.Context(), sp), 500, "index unreadable")

	type loc struct{ block uint64 }
	seen := SeenIn(func(id string) (loc, bool, error) { return loc{7}, id == "x", nil })
	if ok, err := seen("x"); !ok || err != nil {
		t.Fatalf("SeenIn(x) = %v, %v", ok, err)
	}
	if ok, _ := seen("y"); ok {
		t.Fatal("SeenIn(y) = true")
	}
}

func TestCancelledContext(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	sp := sign(t, proposal(t, f.client, testChannel, testNS, "block"), f.client)
	checkRefused(t, f.e(t).ProcessProposal(ctx, sp), 504, "context canceled")
}

func TestSimulateChecks(t *testing.T) {
	f := newFixture(t)
	e := f.e(t)
	foreign := mustIssue(t, mustCA(t, "Org9"), "eve", identity.RoleClient)
	tests := []struct {
		p    *api.Proposal
		want error
	}{
		{&api.Proposal{Contract: testNS}, ErrBadProposal},
		{proposal(t, f.client, "ch2", testNS, "do"), ErrWrongChannel},
		{proposal(t, foreign, testChannel, testNS, "do"), ErrBadCreator},
		{proposal(t, f.client, testChannel, "nope", "do"), ErrUnknownContract},
		{proposal(t, f.client, testChannel, testNS, "fail", "418", "teapot"), ErrContractFailed},
	}
	for _, tc := range tests {
		if _, err := e.Simulate(t.Context(), tc.p); !errors.Is(err, tc.want) {
			t.Errorf("Simulate: %v, want %v", err, tc.want)
		}
	}
	_, err := e.Simulate(t.Context(), tests[4].p)
	var ce *contract.Error
	if StatusOf(err) != 418 || !errors.As(err, &ce) || ce.Message != "teapot" {
		t.Fatalf("contract error %v: status %d, want 418 and the *contract.Error", err, StatusOf(err))
	}
	if StatusOf(nil) != 200 || StatusOf(errors.New("x")) != 500 {
		t.Fatal("StatusOf of nil or a foreign error")
	}
}

// TestEndToEnd endorses one proposal on two orgs' peers, checks both
// endorsements, assembles the transaction as a client would and decodes
// it as the validator does.
func TestEndToEnd(t *testing.T) {
	f := newFixture(t)
	f.commit(t, "a=1", "b=2")
	e1, e2 := f.newEndorser(t, f.peer1), f.newEndorser(t, f.peer2)
	p := proposal(t, f.client, testChannel, testNS, "do", "get", "a", "put", "b", "3", "range", "a", "", "1", "", "event", "ev", "x")
	sp := sign(t, p, f.client)

	var raws [][]byte
	var ends []*api.Endorsement
	for _, e := range []*Endorser{e1, e2} {
		resp := e.ProcessProposal(t.Context(), sp)
		if resp.Status != 200 || resp.Endorsement == nil {
			t.Fatalf("status %d (%s), want 200 with an endorsement", resp.Status, resp.Message)
		}
		m, err := f.reg.Member(resp.Endorsement.Endorser)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Verify(resp.ResponsePayload, resp.Endorsement.Signature); err != nil {
			t.Fatalf("endorsement of %s: %v", m.Name, err)
		}
		raws = append(raws, resp.ResponsePayload)
		ends = append(ends, resp.Endorsement)
	}
	if !bytes.Equal(raws[0], raws[1]) {
		t.Fatal("two endorsers produced different response bytes from the same state")
	}
	var rp api.ResponsePayload
	if err := proto.Unmarshal(raws[0], &rp); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rp.ProposalHash, api.ProposalHash(sp.Proposal)) {
		t.Fatal("proposal hash does not match the proposal bytes")
	}
	raw, id, err := api.SignTx(&api.TxPayload{Header: p.Header, Contract: testNS, ResponsePayload: raws[0], Endorsements: ends}, f.client)
	if err != nil {
		t.Fatal(err)
	}
	tx, code, err := api.DecodeTx(raw)
	if code != api.TxValidationCode_VALID || err != nil {
		t.Fatalf("DecodeTx: %v %v", code, err)
	}
	if id != p.Header.TxId || tx.ID() != id {
		t.Fatalf("tx id %s / %s, want %s", id, tx.ID(), p.Header.TxId)
	}
	ns := tx.RWSet().Namespaces[0]
	if fmtReads(ns.Reads) != "a@0:0" || fmtWrites(ns.Writes) != "b=3" || fmtRange(ns.RangeReads[0]) != `["a","") exhausted=false reads=a@0:0 b@0:1` {
		t.Fatalf("rwset reads %s writes %s range %s", fmtReads(ns.Reads), fmtWrites(ns.Writes), fmtRange(ns.RangeReads[0]))
	}
	if m := e1.Metrics(); m.Proposals != 1 || m.Endorsed != 1 || m.Refused() != 0 {
		t.Fatalf("metrics %+v", m)
	}
}
