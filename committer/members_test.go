package committer

import (
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
	u, err := api.EncodeMembersUpdate(&api.MembersUpdate{Channel: testChannel, Sequence: seq, CRLs: []api.MembersCRL{{Org: org, CRL: crl}}})
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
			check := func(what string, want ...api.TxValidationCode) {
				t.Helper()
				ev := <-sub.C
				if len(ev.Codes) != len(want) {
					t.Fatalf("%s: block %d has %d codes, want %d", what, ev.Number, len(ev.Codes), len(want))
				}
				for i, w := range want {
					if got := api.TxValidationCode(ev.Codes[i]); got != w {
						t.Errorf("%s: block %d tx %d: code %v, want %v", what, ev.Number, i, got, w)
					}
				}
			}
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
			sub = p.Subscribe(4)
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
