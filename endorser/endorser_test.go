package endorser

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

func TestNewRefusesBadConfig(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no channel", func(c *Config) { c.Channel = "" }, "Channel"},
		{"no registry", func(c *Config) { c.Registry = nil }, "Registry"},
		{"no signer", func(c *Config) { c.Signer = nil }, "Signer is nil"},
		{"client signer", func(c *Config) { c.Signer = f.client }, "expected peer"},
		{"foreign signer", func(c *Config) { c.Signer = mustIssue(t, mustCA(t, "Org9"), "p", identity.RolePeer) }, "not a member"},
		{"no state", func(c *Config) { c.State = nil }, "State"},
		{"no seen", func(c *Config) { c.Seen = nil }, "Seen"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "Timeout"},
		{"bad contract name", func(c *Config) { c.Contracts["a\x00b"] = f.contract }, "namespace"},
		{"nil contract", func(c *Config) { c.Contracts["nil"] = nil }, `Contracts["nil"] is nil`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.config(f.peer1)
			tc.mutate(&cfg)
			_, err := New(cfg)
			if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want ErrBadConfig naming %q", err, tc.want)
			}
		})
	}
}

// TestRefusals covers every way ProcessProposal says no: the status, a
// message naming the problem, no endorsement, and the metric.
func TestRefusals(t *testing.T) {
	f := newFixture(t)
	f.timeout = 100 * time.Millisecond
	otherCA := mustCA(t, "Org1") // same org name, not the registry's CA
	stranger := mustIssue(t, otherCA, "mallory", identity.RoleClient)
	foreign := mustIssue(t, mustCA(t, "Org9"), "eve", identity.RoleClient)
	usedP := proposal(t, f.client, testChannel, testNS, "do")
	f.used.Store(usedP.Header.TxId, true)

	good := func(fn string, args ...string) *api.SignedProposal {
		return sign(t, proposal(t, f.client, testChannel, testNS, fn, args...), f.client)
	}
	tests := []struct {
		name    string
		sp      func() *api.SignedProposal
		status  int32
		is      error
		want    []string
		metrics func(Metrics) uint64
	}{
		{"nil", func() *api.SignedProposal { return nil }, 400, ErrBadProposal, []string{"no proposal bytes"}, mBadProposal},
		{"garbage", func() *api.SignedProposal { return &api.SignedProposal{Proposal: []byte{0xff, 0xff}} }, 400, ErrBadProposal, []string{"does not decode"}, mBadProposal},
		{"no header", func() *api.SignedProposal { return sign(t, &api.Proposal{Contract: testNS}, f.client) }, 400, ErrBadProposal, []string{"no header"}, mBadProposal},
		{"empty nonce", func() *api.SignedProposal {
			p := proposal(t, f.client, testChannel, testNS, "do")
			p.Header.Nonce = nil
			return sign(t, p, f.client)
		}, 400, ErrBadProposal, []string{"empty nonce"}, mBadProposal},
		{"wrong channel", func() *api.SignedProposal { return sign(t, proposal(t, f.client, "ch2", testNS, "do"), f.client) }, 404, ErrWrongChannel,
			[]string{`"ch2"`, `"ch1"`}, func(m Metrics) uint64 { return m.WrongChannel }},
		{"unknown org", func() *api.SignedProposal { return sign(t, proposal(t, foreign, testChannel, testNS, "do"), foreign) }, 403, identity.ErrUnknownOrg,
			[]string{`"Org9"`, "Org1, Org2"}, mBadCreator},
		{"untrusted certificate", func() *api.SignedProposal { return sign(t, proposal(t, stranger, testChannel, testNS, "do"), stranger) }, 403, identity.ErrUntrustedCertificate,
			[]string{"does not chain"}, mBadCreator},
		{"peer creator", func() *api.SignedProposal { return sign(t, proposal(t, f.peer1, testChannel, testNS, "do"), f.peer1) }, 403, ErrBadCreator,
			[]string{"role peer", "expected client or admin"}, mBadCreator},
		{"bad tx id", func() *api.SignedProposal {
			p := proposal(t, f.client, testChannel, testNS, "do")
			p.Header.TxId = "abc"
			return sign(t, p, f.client)
		}, 400, ErrBadTxID, []string{`"abc"`, "nonce"}, func(m Metrics) uint64 { return m.BadTxID }},
		{"signature by someone else", func() *api.SignedProposal {
			return sign(t, proposal(t, f.client, testChannel, testNS, "do"), f.admin)
		}, 403, identity.ErrBadSignature, []string{"alice"}, mBadSignature},
		{"tampered proposal", func() *api.SignedProposal {
			sp := good("do")
			sp.Proposal = append(sp.Proposal, 0x22, 0) // an extra empty field 4 (args)
			return sp
		}, 403, ErrBadSignature, []string{"verification failed"}, mBadSignature},
		{"no signature", func() *api.SignedProposal {
			sp := good("do")
			sp.Signature = nil
			return sp
		}, 403, ErrBadSignature, []string{"malformed"}, mBadSignature},
		{"used tx id", func() *api.SignedProposal { return sign(t, usedP, f.client) }, 409, ErrDuplicateTxID,
			[]string{usedP.Header.TxId, "already used; build a new proposal with a new nonce"}, func(m Metrics) uint64 { return m.DuplicateTxID }},
		{"unknown contract", func() *api.SignedProposal { return sign(t, proposal(t, f.client, testChannel, "nope", "do"), f.client) }, 404, ErrUnknownContract,
			[]string{`"nope"`, "kv, other"}, func(m Metrics) uint64 { return m.UnknownContract }},
		{"panic", func() *api.SignedProposal { return good("panic") }, 500, ErrPanicked,
			[]string{`contract "kv" function "panic" panicked: boom`}, func(m Metrics) uint64 { return m.Panicked }},
		{"goexit", func() *api.SignedProposal { return good("goexit") }, 500, ErrPanicked,
			[]string{"Goexit"}, func(m Metrics) uint64 { return m.Panicked }},
		{"timeout", func() *api.SignedProposal { return good("block") }, 504, ErrTimedOut,
			[]string{`contract "kv" function "block" timed out after 100ms`}, func(m Metrics) uint64 { return m.TimedOut }},
		{"contract error", func() *api.SignedProposal { return good("fail", "404", "no account bob") }, 404, ErrContractFailed,
			[]string{"endorser: kv.fail: no account bob"}, mContract},
		{"contract error with a 200 status", func() *api.SignedProposal { return good("fail", "200", "sneaky") }, 500, ErrContractFailed,
			[]string{"kv.fail: sneaky (the contract's status 200 is no error status; answered as 500)"}, mContract},
		{"plain error", func() *api.SignedProposal { return good("plainerr") }, 500, ErrContractFailed,
			[]string{`kv.plainerr: disk on fire`}, mContract},
		{"unknown function", func() *api.SignedProposal { return good("nosuch") }, 400, ErrContractFailed,
			[]string{`no function "nosuch"`}, mContract},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.metrics(f.e(t).Metrics())
			sp := tc.sp()
			resp := f.e(t).ProcessProposal(t.Context(), sp)
			checkRefused(t, resp, tc.status, tc.want...)
			if after := tc.metrics(f.e(t).Metrics()); after != before+1 {
				t.Errorf("metric went from %d to %d, want +1", before, after)
			}
			// The error behind the message wraps the sentinel.
			_, _, err := f.e(t).processProposal(t.Context(), f.e(t).contracts.Load(), sp, new(uint64))
			if !errors.Is(err, tc.is) || StatusOf(err) != tc.status {
				t.Errorf("error %v (status %d), want one wrapping %v with status %d", err, StatusOf(err), tc.is, tc.status)
			}
		})
	}
	m := f.e(t).Metrics()
	if m.Endorsed != 0 || m.Refused() != uint64(len(tests)) || m.Proposals != uint64(len(tests)) {
		t.Fatalf("metrics %+v after %d refusals", m, len(tests))
	}
	if s := m.String(); !strings.Contains(s, "refused, contract panic: 2") {
		t.Errorf("metrics string lacks the panic count:\n%s", s)
	}
	// The timed-out calls (two: the table runs each case twice) are
	// overdue until released; their next stub call then ends them.
	if m.Overdue != 2 {
		t.Errorf("Overdue = %d with two timed-out calls blocked, want 2", m.Overdue)
	}
	close(f.release)
	f.release = make(chan struct{}) // for the fixture's cleanup
	waitOverdue(t, f.e(t), 0)
	select {
	case err := <-f.late:
		t.Fatalf("an abandoned call's stub call returned (%v); want it to end the call", err)
	default:
	}
}

// waitOverdue waits until e has n calls running past their deadline.
func waitOverdue(t *testing.T, e *Endorser, n uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.Metrics().Overdue != n {
		if time.Now().After(deadline) {
			t.Fatalf("Overdue = %d after 10 s, want %d", e.Metrics().Overdue, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestOverdueContracts: a contract call past its deadline cannot hold a
// goroutine or the endorser forever. One that keeps calling its stub is
// ended by that call; while a contract has MaxOverdue calls that never
// return, its proposals are refused at once (503) and other contracts
// are served; when they end, it is served again.
func TestOverdueContracts(t *testing.T) {
	f := newFixture(t)
	f.timeout = 50 * time.Millisecond
	cfg := f.config(f.peer1)
	cfg.MaxOverdue = 2
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	good := func(ns, fn string) *api.SignedProposal {
		return sign(t, proposal(t, f.client, testChannel, ns, fn), f.client)
	}
	checkRefused(t, e.ProcessProposal(t.Context(), good(testNS, "spin")), 504, `function "spin" timed out after 50ms`)
	waitOverdue(t, e, 0) // its next GetState ended it

	for range 2 {
		checkRefused(t, e.ProcessProposal(t.Context(), good(testNS, "block")), 504, "timed out")
	}
	if m := e.Metrics(); m.Overdue != 2 {
		t.Fatalf("Overdue = %d, want 2", m.Overdue)
	}
	checkRefused(t, e.ProcessProposal(t.Context(), good(testNS, "do")), 503,
		`contract "kv" has 2 calls still running after their 50ms deadline (the bound is 2)`)
	if m := e.Metrics(); m.Quarantined != 1 {
		t.Errorf("Quarantined = %d, want 1", m.Quarantined)
	}
	if r := e.ProcessProposal(t.Context(), good("other", "do")); r.Status != 200 {
		t.Errorf("another contract while kv is quarantined: %d %s, want 200", r.Status, r.Message)
	}
	close(f.release)
	f.release = make(chan struct{})
	waitOverdue(t, e, 0)
	if r := e.ProcessProposal(t.Context(), good(testNS, "do")); r.Status != 200 {
		t.Errorf("kv after its overdue calls ended: %d %s, want 200", r.Status, r.Message)
	}
}

func mBadProposal(m Metrics) uint64  { return m.BadProposal }
func mBadCreator(m Metrics) uint64   { return m.BadCreator }
func mBadSignature(m Metrics) uint64 { return m.BadSignature }
func mContract(m Metrics) uint64     { return m.ContractFailed }

func checkRefused(t *testing.T, resp *api.ProposalResponse, status int32, want ...string) {
	t.Helper()
	if resp == nil {
		t.Fatal("nil response")
	}
	if resp.Status != status {
		t.Errorf("status %d (%s), want %d", resp.Status, resp.Message, status)
	}
	for _, w := range want {
		if !strings.Contains(resp.Message, w) {
			t.Errorf("message %q does not contain %q", resp.Message, w)
		}
	}
	if resp.Endorsement != nil || resp.ResponsePayload != nil {
		t.Errorf("refusal carries an endorsement or payload")
	}
}

// TestSequenceInAnswers: an answer names the sequence of the definition
// of its contract that ran (SetDefinitions), refusals too; a contract
// with no sequence, or none defined, answers 0; after SetDefinitions the
// new sequence.
func TestSequenceInAnswers(t *testing.T) {
	f := newFixture(t)
	cfg := f.config(f.peer1)
	cfg.Definitions = map[string]Definition{testNS: {Sequence: 3}}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(ns, fn string, args ...string) *api.ProposalResponse {
		return e.ProcessProposal(t.Context(), sign(t, proposal(t, f.client, testChannel, ns, fn, args...), f.client))
	}
	for _, tc := range []struct {
		ns, fn string
		args   []string
		status int32
		seq    uint64
	}{
		{testNS, "do", []string{"put", "k", "v"}, 200, 3},
		{testNS, "fail", []string{"412", "init first"}, 412, 3},
		{"other", "do", []string{"put", "k", "v"}, 200, 0},
		{"nosuch", "do", nil, 404, 0},
	} {
		r := ask(tc.ns, tc.fn, tc.args...)
		if r.Status != tc.status || r.Sequence != tc.seq || e.Sequence(tc.ns) != tc.seq {
			t.Errorf("%s.%s: status %d sequence %d (Sequence %d), want %d and %d (%s)", tc.ns, tc.fn, r.Status, r.Sequence, e.Sequence(tc.ns), tc.status, tc.seq, r.Message)
		}
	}
	if err := e.SetDefinitions(cfg.Contracts, map[string]Definition{testNS: {Sequence: 4}, "other": {Sequence: 1}}); err != nil {
		t.Fatal(err)
	}
	if r := ask(testNS, "do", "put", "k", "v"); r.Sequence != 4 {
		t.Errorf("after SetDefinitions: sequence %d, want 4", r.Sequence)
	}
	if r := ask("other", "do", "put", "k", "v"); r.Sequence != 1 {
		t.Errorf("other after SetDefinitions: sequence %d, want 1", r.Sequence)
	}
}

// TestRefusedCountsOthersAsInternal: an error that is no refusal counts
// as internal, not under the last reason.
func TestRefusedCountsOthersAsInternal(t *testing.T) {
	var c counters
	c.refused(errors.New("disk on fire"))
	c.refused(refuse(ErrBehind, nil, "behind"))
	if m := c.snapshot(); m.Internal != 1 || m.Behind != 1 || m.Refused() != 2 {
		t.Fatalf("%+v; want one internal, one behind", m)
	}
}
