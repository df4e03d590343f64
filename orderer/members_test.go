package orderer

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

// TestCheckMembers: the orderer's door for membership updates refuses a
// stale sequence, too few admin signatures and a CRL not signed by the
// org's CA, each by name, and its lists then refuse the revoked creator.
func TestCheckMembers(t *testing.T) {
	ca1, _ := identity.NewCA("Org1", identity.ECDSAP256)
	ca2, _ := identity.NewCA("Org2", identity.ECDSAP256)
	reg, err := identity.NewRegistry([]identity.Org{{ID: "Org1", CACerts: [][]byte{ca1.CertDER()}}, {ID: "Org2", CACerts: [][]byte{ca2.CertDER()}}})
	if err != nil {
		t.Fatal(err)
	}
	a1, _ := ca1.Issue("admin1", identity.RoleAdmin, identity.ECDSAP256)
	a2, _ := ca2.Issue("admin2", identity.RoleAdmin, identity.ECDSAP256)
	c1, _ := ca1.Issue("client1", identity.RoleClient, identity.ECDSAP256)
	m1, err := reg.Member(c1.Identity())
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := new(big.Int).SetString(m1.Serial(), 16)
	crl := func(ca *identity.CA) []byte {
		der, err := ca.RevokeCRL(nil, []*big.Int{serial}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	update := func(seq uint64, der []byte, signers ...api.Signer) []byte {
		u, _ := api.EncodeMembersUpdate(&api.MembersUpdate{Channel: "ch", Sequence: seq, CRLs: []api.MembersCRL{{Org: "Org1", CRL: der}}})
		env, err := api.SignConfigUpdate(u, signers...)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := api.EncodeMembers(env)
		return raw
	}
	for _, c := range []struct {
		name string
		raw  []byte
		want error
		text string
	}{
		{"stale sequence", update(1, crl(ca1), a1, a2), ErrStaleMembers, "want sequence 0"},
		{"too few signatures", update(0, crl(ca1), a1), identity.ErrNoMajority, "1 of the channel's 2 orgs"},
		{"CRL not signed by the org's CA", update(0, crl(ca2), a1, a2), identity.ErrBadCRL, `not signed by a CA of org "Org1"`},
		{"another channel", func() []byte {
			u, _ := api.EncodeMembersUpdate(&api.MembersUpdate{Channel: "other", CRLs: []api.MembersCRL{{Org: "Org1", CRL: crl(ca1)}}})
			env, _ := api.SignConfigUpdate(u, a1, a2)
			raw, _ := api.EncodeMembers(env)
			return raw
		}(), ErrConfigUpdate, `for channel "other"`},
		{"malformed", []byte(api.MembersMagic + "{"), api.ErrBadConfigUpdate, "membership envelope"},
	} {
		_, err := checkMembers(reg, "ch", nil, c.raw)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.want, c.text)
		}
	}
	rv, err := checkMembers(reg, "ch", nil, update(0, crl(ca1), a1, a2))
	if err != nil {
		t.Fatal(err)
	}
	if err := rv.Check(m1); !errors.Is(err, identity.ErrRevoked) || !strings.Contains(err.Error(), "client1") {
		t.Fatalf("client1 under the new lists: %v", err)
	}
	if _, err := checkMembers(reg, "ch", rv, update(0, crl(ca1), a1, a2)); !errors.Is(err, ErrStaleMembers) {
		t.Errorf("the same sequence again: %v, want ErrStaleMembers", err)
	}
}
