package committer

import (
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

// crl returns a CRL of org signed by ca (org's CA unless another is
// given), listing prev's serials and those of who.
func (n *testNet) crl(ca *identity.CA, prev []byte, who ...*identity.Signer) []byte {
	n.t.Helper()
	var serials []*big.Int
	for _, s := range who {
		m, err := n.ch.Registry.Member(s.Identity())
		if err != nil {
			n.t.Fatal(err)
		}
		v, _ := new(big.Int).SetString(m.Serial(), 16)
		serials = append(serials, v)
	}
	der, err := ca.RevokeCRL(prev, serials, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		n.t.Fatal(err)
	}
	return der
}

// membersTx is a membership update of org's CRL at seq, signed by admins.
func (n *testNet) membersTx(seq uint64, org string, crl []byte, admins ...*identity.Signer) []byte {
	n.t.Helper()
	return n.membersUpdateTx(&api.MembersUpdate{Channel: testChannel, Sequence: seq, CRLs: []api.MembersCRL{{Org: org, CRL: crl}}}, admins...)
}

// membersUpdateTx is the membership update mu, signed by admins.
func (n *testNet) membersUpdateTx(mu *api.MembersUpdate, admins ...*identity.Signer) []byte {
	n.t.Helper()
	u, err := api.EncodeMembersUpdate(mu)
	if err != nil {
		n.t.Fatal(err)
	}
	signers := make([]api.Signer, len(admins))
	for i, a := range admins {
		signers[i] = a
	}
	env, err := api.SignConfigUpdate(u, signers...)
	if err != nil {
		n.t.Fatal(err)
	}
	raw, err := api.EncodeMembers(env)
	if err != nil {
		n.t.Fatal(err)
	}
	return raw
}

// TestMembers: a membership update signed by a majority of the orgs'
// admins, with the next sequence and a CRL signed by the org's CA, is
// VALID and in force from the next block: the revoked client's
// transactions get BAD_CREATOR_SIGNATURE and a revoked peer's endorsement
// does not count, whatever the timing of stage 1 (the next block is
// delivered before the update's block is validated); a stale sequence, a
// stale CRL, too few signatures and a CRL not signed by the org's CA each
// get a code. The lists survive a restart, and the registry's admission
// set follows the committed height.
func TestMembers(t *testing.T) {
	for _, opts := range []Options{{Mode: Sequential}, {Mode: Parallel}} {
		t.Run(opts.Mode.String(), func(t *testing.T) {
			n := newTestNet(t)
			dir := t.TempDir()
			p := openPeer(t, n, dir, opts)
			sub := p.Subscribe(16)
			check := codeChecker(t, sub, true)
			a0, a1, a2 := n.ordererAdmin, n.org1Admin, n.org2Admin
			kv := func(k string) *api.RWSet { return rwset(testContract, nil, wr(k, "v")) }
			org1CRL := n.crl(n.cas["Org1"], nil, n.client1, n.peer1)

			// Refused updates: none changes anything.
			deliver(t, p, n.block(
				n.membersTx(0, "Org1", n.crl(n.cas["Org1"], nil, n.client1), a1),     // 1 org of 3
				n.membersTx(0, "Org1", n.crl(n.cas["Org2"], nil, n.client1), a1, a2), // signed by Org2's CA
				n.membersTx(1, "Org1", n.crl(n.cas["Org1"], nil, n.client1), a1, a2), // sequence ahead
			))
			check("refused updates", api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE,
				api.TxValidationCode_INVALID_CONFIG_TRANSACTION, api.TxValidationCode_INVALID_CONFIG_TRANSACTION)
			if p.Revocations() != nil {
				t.Fatalf("revocations after refused updates: %v", p.Revocations())
			}

			// The update and a tx of client1 in its block: that one is
			// decided under the lists before it. The next block is
			// delivered before this one is validated.
			upd := n.membersTx(0, "Org1", org1CRL, a0, a2)
			if err := p.Deliver(n.block(upd, n.tx(kv("k1")))); err != nil {
				t.Fatal(err)
			}
			deliver(t, p, n.block(
				n.tx(kv("k2")), // client1: revoked
				n.txBy(kv("k3"), n.client2, n.peer1, n.peer2), // endorsed by revoked peer1
				n.txBy(kv("k4"), n.client2, n.peer1b, n.peer2),
				upd, // a replay: its tx id is used
				n.membersTx(0, "Org1", n.crl(n.cas["Org1"], org1CRL), a0, a2), // stale sequence
			))
			check("update", api.TxValidationCode_VALID, api.TxValidationCode_VALID)
			check("after the update", api.TxValidationCode_BAD_CREATOR_SIGNATURE, api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE,
				api.TxValidationCode_VALID, api.TxValidationCode_DUPLICATE_TXID, api.TxValidationCode_INVALID_CONFIG_TRANSACTION)
			m1, _ := n.ch.Registry.Member(n.client1.Identity())
			if rv := p.Revocations(); rv.Sequence() != 1 || rv.Check(m1) == nil || n.ch.Registry.Revoked(m1) == nil {
				t.Fatalf("revocations after the update: seq %d, client1 %v", rv.Sequence(), rv.Check(m1))
			}

			// The same CRL number again with the right sequence is stale.
			deliver(t, p, n.block(n.membersTx(1, "Org1", org1CRL, a0, a1, a2)))
			check("stale CRL", api.TxValidationCode_INVALID_CONFIG_TRANSACTION)

			p.close()
			n.ch.Registry.SetRevocations(nil)
			p = openPeer(t, n, dir, opts)
			if rv := p.Revocations(); rv.Sequence() != 1 || rv.Check(m1) == nil {
				t.Fatalf("revocations after a restart: seq %d", rv.Sequence())
			}
			check = codeChecker(t, p.Subscribe(4), true)
			// Org1 lifts peer1's revocation (CRL 2 lists client1 only).
			deliver(t, p, n.block(n.membersTx(1, "Org1", n.crl(n.cas["Org1"], nil, n.client1), a0, a2)))
			check("a CRL numbered 1 again", api.TxValidationCode_INVALID_CONFIG_TRANSACTION)
			crl2 := n.crl(n.cas["Org1"], org1CRL)
			deliver(t, p, n.block(n.membersTx(1, "Org1", crl2, a0, a1, a2), n.txBy(kv("k5"), n.client2, n.peer1, n.peer2)))
			check("CRL 2", api.TxValidationCode_VALID, api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE)
			deliver(t, p, n.block(n.tx(kv("k6"))))
			check("client1 after CRL 2", api.TxValidationCode_BAD_CREATOR_SIGNATURE)
		})
	}
}

// TestOrgMembers: an update signed by a majority of the current orgs'
// admins adds an org (its members count from the next block on, whatever
// the timing of stage 1, and its admin counts toward later majorities)
// or removes one (its client is BAD_CREATOR_SIGNATURE and its peer's
// endorsement no longer satisfies a policy that names it, from the next
// block on); adding a member, an org whose CA is not its own, removing
// an unknown org or too few signatures are each refused. The membership
// survives a restart.
func TestOrgMembers(t *testing.T) {
	n := newTestNet(t)
	dir := t.TempDir()
	p := openPeer(t, n, dir, Options{Mode: Parallel})
	sub := p.Subscribe(16)
	check := codeChecker(t, sub, false)
	ca4, admin4, client4 := org4(t)
	def := func(id string, ca []byte) []api.MembersOrg {
		return []api.MembersOrg{{ID: id, CACerts: [][]byte{ca}, TLSCACerts: [][]byte{ca}}}
	}
	upd := n.orgsUpdateTx
	a0, a1, a2 := n.ordererAdmin, n.org1Admin, n.org2Admin
	kv := func(k string) *api.RWSet { return rwset(testContract, nil, wr(k, "v")) }

	deliver(t, p, n.block(
		upd(0, def("Org1", n.caCert("Org1")), nil, a0, a1, a2),  // a member
		upd(0, def("Org4", n.caCert("Org1")), nil, a0, a1, a2),  // Org1's CA as Org4's
		upd(0, nil, []string{"Org7"}, a0, a1, a2),               // unknown
		upd(0, def("Org4", ca4.CertDER()), nil, a1),             // 1 of 3
		upd(0, def("Org4", ca4.CertDER()), nil, a0, a1, admin4), // Org4 does not sign its own admission
	))
	check("refused", api.TxValidationCode_INVALID_CONFIG_TRANSACTION, api.TxValidationCode_INVALID_CONFIG_TRANSACTION,
		api.TxValidationCode_INVALID_CONFIG_TRANSACTION, api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, api.TxValidationCode_VALID)
	// The last was VALID all the same: a0 and a1 are 2 of 3. Org4's
	// client in the next block, delivered before that one is validated,
	// is checked under the membership after it.
	if err := p.Deliver(n.block(n.txBy(kv("k1"), client4, n.peer1, n.peer2))); err != nil {
		t.Fatal(err)
	}
	check("Org4's client after the add", api.TxValidationCode_VALID)
	if got := n.ch.Registry.Orgs(); len(got) != 4 {
		t.Fatalf("orgs after the add: %v", got)
	}

	// Removing Org2 takes 2 of the 3 orgs that stay; Org2's admin does
	// not count, Org4's does.
	deliver(t, p, n.block(upd(1, nil, []string{"Org2"}, a1, a2), upd(1, nil, []string{"Org2"}, a0, admin4),
		n.txBy(kv("k2"), n.client2, n.peer1, n.peer2)))
	check("remove", api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, api.TxValidationCode_VALID, api.TxValidationCode_VALID)
	deliver(t, p, n.block(n.txBy(kv("k3"), n.client2, n.peer1, n.peer2), n.txBy(kv("k4"), client4, n.peer1, n.peer2),
		upd(2, def("Org2", n.caCert("Org2")), nil, a0, a1, admin4)))
	check("after the removal", api.TxValidationCode_BAD_CREATOR_SIGNATURE, api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE,
		api.TxValidationCode_INVALID_CONFIG_TRANSACTION)

	p.close()
	n.ch.Registry.SetRevocations(nil)
	p = openPeer(t, n, dir, Options{Mode: Sequential})
	m2, _ := n.ch.Registry.Member(n.client2.Identity())
	m4, _ := n.ch.Registry.Member(client4.Identity())
	if rv := p.Revocations(); rv.Sequence() != 2 || !errors.Is(rv.Check(m2), identity.ErrOrgRemoved) || rv.Check(m4) != nil {
		t.Fatalf("after a restart: seq %d, Org2 %v, Org4 %v", rv.Sequence(), rv.Check(m2), rv.Check(m4))
	}
}

// codeChecker checks the codes of the next block sub announces: exactly
// as many as want when exact, else the first len(want).
func codeChecker(t *testing.T, sub *Subscription, exact bool) func(what string, want ...api.TxValidationCode) {
	return func(what string, want ...api.TxValidationCode) {
		t.Helper()
		ev := <-sub.C
		if exact && len(ev.Codes) != len(want) {
			t.Fatalf("%s: block %d has %d codes, want %d", what, ev.Number, len(ev.Codes), len(want))
		}
		for i, w := range want {
			if got := api.TxValidationCode(ev.Codes[i]); got != w {
				t.Errorf("%s: block %d tx %d: code %v, want %v", what, ev.Number, i, got, w)
			}
		}
	}
}

// org4 is an org outside the test channel: its CA, an admin and a client.
func org4(t *testing.T) (*identity.CA, *identity.Signer, *identity.Signer) {
	t.Helper()
	ca, err := identity.NewCA("Org4", identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	admin, _ := ca.Issue("admin4", identity.RoleAdmin, identity.ECDSAP256)
	client, _ := ca.Issue("client4", identity.RoleClient, identity.ECDSAP256)
	return ca, admin, client
}

// orgsUpdateTx is a membership update adding and removing orgs.
func (n *testNet) orgsUpdateTx(seq uint64, add []api.MembersOrg, remove []string, admins ...*identity.Signer) []byte {
	return n.membersUpdateTx(&api.MembersUpdate{Channel: testChannel, Sequence: seq, Add: add, Remove: remove}, admins...)
}
