package committer

import (
	"fmt"
	"maps"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/policy"
)

// defTx builds a definition transaction of contract name at seq with
// policy pol, created by org1's admin and signed by admins.
func (n *testNet) defTx(name string, seq uint64, pol string, code []byte, admins ...*identity.Signer) []byte {
	n.t.Helper()
	d := &lifecycle.Definition{Channel: testChannel, Name: name, Version: fmt.Sprintf("v%d", seq), Sequence: seq, Runtime: lifecycle.RuntimeBuiltin, Policy: pol}
	if code != nil {
		d.Runtime, d.CodeHash = lifecycle.RuntimeWasm, lifecycle.CodeHash(code)
	}
	if _, err := d.Encode(); err != nil {
		n.t.Fatal(err)
	}
	return n.lifecycleTx(lifecycle.Writes(d, code), admins...)
}

func (n *testNet) lifecycleTx(rw *api.RWSet, admins ...*identity.Signer) []byte {
	n.t.Helper()
	es := make([]api.Signer, len(admins))
	for i, a := range admins {
		es[i] = a
	}
	raw, _, err := api.BuildTx(api.TxSpec{Channel: testChannel, Contract: lifecycle.Namespace, Function: "define", Nonce: n.nextNonce(), RWSet: rw},
		n.org1Admin, es)
	if err != nil {
		n.t.Fatal(err)
	}
	return raw
}

// ccTx is a transaction of contract cc writing key, endorsed by endorsers.
func (n *testNet) ccTx(cc, key string, endorsers ...*identity.Signer) []byte {
	n.t.Helper()
	es := make([]api.Signer, len(endorsers))
	for i, e := range endorsers {
		es[i] = e
	}
	raw, _, err := api.BuildTx(api.TxSpec{Channel: testChannel, Contract: cc, Function: "f", Nonce: n.nextNonce(),
		RWSet: rwset(cc, nil, wr(key, "v"))}, n.client1, es)
	if err != nil {
		n.t.Fatal(err)
	}
	return raw
}

// TestLifecycle: definitions are agreed by the lifecycle policy, take
// effect from the block after theirs, rise by one sequence at a time,
// keep the contract's state across an upgrade, and survive a restart.
func TestLifecycle(t *testing.T) {
	for _, opts := range []Options{{Mode: Sequential}, {Mode: Parallel}} {
		t.Run(opts.Mode.String(), func(t *testing.T) {
			n := newTestNet(t)
			n.ch.Lifecycle = policy.MustParse("OutOf(2, 'Org1.admin', 'Org2.admin')")
			dir := t.TempDir()
			p := openPeer(t, n, dir, opts)
			sub := p.Subscribe(16)
			check := codeChecker(t, sub, false)
			a1, a2 := n.org1Admin, n.org2Admin
			deliver(t, p, n.block(n.ccTx("cc2", "k0", n.peer1)))
			check("before its definition", api.TxValidationCode_INVALID_CHAINCODE)

			deliver(t, p, n.block(n.defTx("cc2", 1, "OR('Org1.peer')", nil, a1, a2), n.ccTx("cc2", "k1", n.peer1)))
			check("definition, and a tx in its own block", api.TxValidationCode_VALID, api.TxValidationCode_INVALID_CHAINCODE)
			if e, ok := p.Definitions().Get("cc2"); !ok || e.Sequence != 1 {
				t.Fatalf("Definitions after block 2: cc2 = %+v, %v", e, ok)
			}

			code := []byte("\x00asm\x01\x00\x00\x00")
			badHash := n.lifecycleTx(func() *api.RWSet {
				rw := lifecycle.Writes(mustDef(t, "cc3", 1, code), code)
				rw.Namespaces[0].Writes[1].Value = []byte("other code")
				return rw
			}(), a1, a2)
			deliver(t, p, n.block(
				n.ccTx("cc2", "k2", n.peer1),
				n.defTx("cc2", 1, "OR('Org1.peer')", nil, a1, a2), // a replay of sequence 1
				n.defTx("cc2", 3, "OR('Org1.peer')", nil, a1, a2), // skips 2
				n.defTx("cc4", 1, "OR('Org1.peer')", nil, a1),     // one admin of two
				n.defTx("cc4", 1, "OR('Org1.peer')", nil, a1, n.peer2),
				badHash,
				n.lifecycleTx(rwset(lifecycle.Namespace, nil, wr("def/_x", `{"channel":"`+testChannel+`","name":"_x","version":"1","sequence":1,"runtime":"builtin","policy":"OR('Org1.peer')"}`)), a1, a2),
				n.lifecycleTx(rwset(lifecycle.Namespace, nil, wr("def/x", "{}")), a1, a2),
				n.defTx("cc5", 1, "OR('Org9.peer')", nil, a1, a2),
			))
			check("bad definitions", api.TxValidationCode_VALID, api.TxValidationCode_CHAINCODE_VERSION_CONFLICT,
				api.TxValidationCode_CHAINCODE_VERSION_CONFLICT, api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE,
				api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, api.TxValidationCode_INVALID_CHAINCODE,
				api.TxValidationCode_BAD_RWSET, api.TxValidationCode_BAD_RWSET, api.TxValidationCode_BAD_RWSET)
			// "{}" has no policy, which lifecycle.Decode finds first.
			refused := map[string]uint64{RefusedSequence: 2, RefusedSignatures: 2, RefusedCodeHash: 1, RefusedMalformed: 1, RefusedPolicy: 2}
			if got := p.Metrics().DefinitionsRefused; !maps.Equal(got, refused) {
				t.Errorf("refused definitions by reason: %v, want %v", got, refused)
			}

			// Upgrade to a stricter policy; the next block is delivered
			// before this one is validated, so its stage 1 may run under
			// the old rules and must be decided again.
			if err := p.Deliver(n.block(n.defTx("cc2", 2, "AND('Org1.peer','Org2.peer')", code, a2, a1))); err != nil {
				t.Fatal(err)
			}
			deliver(t, p, n.block(n.ccTx("cc2", "k3", n.peer1), n.ccTx("cc2", "k4", n.peer1, n.peer2)))
			check("upgrade", api.TxValidationCode_VALID)
			check("after the upgrade", api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, api.TxValidationCode_VALID)
			state := dumpState(t, p.db, "cc2")
			if len(state) != 2 || state["cc2/k2"] == "" || state["cc2/k4"] == "" {
				t.Errorf("cc2 state after the upgrade: %v, want k2 (before it) and k4", state)
			}
			if got := dumpState(t, p.db, lifecycle.Namespace)[lifecycle.Namespace+"/"+lifecycle.CodeKey(lifecycle.CodeHash(code))]; got == "" {
				t.Errorf("the module of cc2's sequence 2 is not in state")
			}

			p.close()
			p = openPeer(t, n, dir, opts)
			if e, ok := p.Definitions().Get("cc2"); !ok || e.Sequence != 2 || e.Def == nil || e.Def.Runtime != lifecycle.RuntimeWasm {
				t.Fatalf("Definitions after a restart: cc2 = %+v, %v", e, ok)
			}
			check = codeChecker(t, p.Subscribe(4), false)
			deliver(t, p, n.block(n.ccTx("cc2", "k5", n.peer1), n.defTx("cc2", 3, "OR('Org2.peer')", nil, a1, a2)))
			check("after a restart", api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, api.TxValidationCode_VALID)
		})
	}
}

// TestLifecycleOff: a channel without a lifecycle policy refuses every
// definition.
func TestLifecycleOff(t *testing.T) {
	n := newTestNet(t)
	p := openPeer(t, n, t.TempDir(), Options{})
	sub := p.Subscribe(1)
	deliver(t, p, n.block(n.defTx("cc2", 1, "OR('Org1.peer')", nil, n.org1Admin, n.org2Admin)))
	if code := api.TxValidationCode((<-sub.C).Codes[0]); code != api.TxValidationCode_INVALID_CHAINCODE {
		t.Errorf("definition on a channel without a lifecycle policy: %v, want INVALID_CHAINCODE", code)
	}
}

func mustDef(t *testing.T, name string, seq uint64, code []byte) *lifecycle.Definition {
	t.Helper()
	d := &lifecycle.Definition{Channel: testChannel, Name: name, Version: "1", Sequence: seq, Runtime: lifecycle.RuntimeWasm,
		CodeHash: lifecycle.CodeHash(code), Policy: "OR('Org1.peer')"}
	if _, err := d.Encode(); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLifecycleFollowsMembers: a channel without a lifecycle policy of
// its own approves definitions by a majority of the admins of the orgs
// that are members at the block (less orgs without peers): removing Org2
// of Org1 and Org2 leaves Org1's admin alone enough, where the genesis
// majority could no longer be given by any member; adding Org4 makes it
// count; the rule holds across a restart.
func TestLifecycleFollowsMembers(t *testing.T) {
	n := newTestNet(t)
	n.ch.LifecycleFollows, n.ch.Unendorsing = true, []string{"OrdererOrg"}
	dir := t.TempDir()
	p := openPeer(t, n, dir, Options{Mode: Parallel})
	sub := p.Subscribe(16)
	check := codeChecker(t, sub, false)
	ca4, admin4, _ := org4(t)
	upd := n.orgsUpdateTx
	a0, a1, a2 := n.ordererAdmin, n.org1Admin, n.org2Admin
	pol := "OR('Org1.peer')"

	deliver(t, p, n.block(n.defTx("cc1", 1, pol, nil, a1), n.defTx("cc2", 1, pol, nil, a1, a2)))
	check("Org1 and Org2 members", api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, api.TxValidationCode_VALID)

	deliver(t, p, n.block(upd(0, nil, []string{"Org2"}, a0, a1), n.defTx("cc3", 1, pol, nil, a1)))
	check("in the block that removes Org2", api.TxValidationCode_VALID, api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE)
	deliver(t, p, n.block(n.defTx("cc3", 1, pol, nil, a1)))
	check("after Org2's removal", api.TxValidationCode_VALID)

	deliver(t, p, n.block(upd(1, []api.MembersOrg{{ID: "Org4", CACerts: [][]byte{ca4.CertDER()}, TLSCACerts: [][]byte{ca4.CertDER()}}}, nil, a0, a1)))
	check("Org4 added", api.TxValidationCode_VALID)
	deliver(t, p, n.block(n.defTx("cc4", 1, pol, nil, a1), n.defTx("cc5", 1, pol, nil, a1, admin4)))
	check("after Org4's admission", api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, api.TxValidationCode_VALID)

	p.close()
	n.ch.Registry.SetRevocations(nil)
	p = openPeer(t, n, dir, Options{Mode: Sequential})
	check = codeChecker(t, p.Subscribe(16), false)
	deliver(t, p, n.block(n.defTx("cc6", 1, pol, nil, a1), n.defTx("cc7", 1, pol, nil, admin4, a1)))
	check("after a restart", api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, api.TxValidationCode_VALID)
}
