package identity_test

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

func TestRevocation(t *testing.T) {
	ca1, _ := identity.NewCA("Org1", identity.ECDSAP256)
	ca2, _ := identity.NewCA("Org2", identity.ECDSAP256)
	reg, err := identity.NewRegistry([]identity.Org{{ID: "Org1", CACerts: [][]byte{ca1.CertDER()}}, {ID: "Org2", CACerts: [][]byte{ca2.CertDER()}}})
	if err != nil {
		t.Fatal(err)
	}
	alice, _ := ca1.Issue("alice", identity.RoleClient, identity.ECDSAP256)
	bob, _ := ca1.Issue("bob", identity.RoleClient, identity.ECDSAP256)
	ma, err := reg.Member(alice.Identity())
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := reg.Member(bob.Identity())
	serial, _ := new(big.Int).SetString(ma.Serial(), 16)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	crl, err := ca1.RevokeCRL(nil, []*big.Int{serial}, now)
	if err != nil {
		t.Fatal(err)
	}

	// A CRL of Org1 signed by Org2's CA, or given as Org2's, is refused.
	forged, _ := ca2.RevokeCRL(nil, []*big.Int{serial}, now)
	if _, err := reg.ParseCRL("Org1", forged); !errors.Is(err, identity.ErrBadCRL) || !strings.Contains(err.Error(), "not signed by a CA of org \"Org1\"") {
		t.Fatalf("Org1 CRL signed by Org2's CA: %v, want ErrBadCRL", err)
	}
	if _, err := reg.ParseCRL("Org2", crl); !errors.Is(err, identity.ErrBadCRL) {
		t.Fatalf("Org1's CRL as Org2's: %v, want ErrBadCRL", err)
	}
	if _, err := reg.ParseCRL("Org3", crl); !errors.Is(err, identity.ErrBadCRL) || !errors.Is(err, identity.ErrUnknownOrg) {
		t.Fatalf("unknown org: %v", err)
	}
	if _, err := reg.ParseCRL("Org1", crl[:len(crl)/2]); !errors.Is(err, identity.ErrBadCRL) {
		t.Fatalf("torn CRL: %v", err)
	}

	c, err := reg.ParseCRL("Org1", crl)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := (*identity.Revocations)(nil).Next([]*identity.CRL{c})
	if err != nil || rv.Sequence() != 1 {
		t.Fatalf("first CRL: %v, seq %d", err, rv.Sequence())
	}
	err = rv.Check(ma)
	for _, want := range []string{"revoked", "alice", ma.Serial(), `org "Org1"`, "CRL number 1"} {
		if !errors.Is(err, identity.ErrRevoked) || !strings.Contains(err.Error(), want) {
			t.Fatalf("revoked alice: %v, want ErrRevoked naming %q", err, want)
		}
	}
	if err := rv.Check(mb); err != nil {
		t.Fatalf("bob is not revoked: %v", err)
	}
	// The registry's admission set is separate from a Revocations value.
	if err := reg.Revoked(ma); err != nil {
		t.Fatalf("no revocations set yet: %v", err)
	}
	reg.SetRevocations(rv)
	if err := reg.Admit(ma, now); !errors.Is(err, identity.ErrRevoked) {
		t.Fatalf("admit alice: %v", err)
	}
	if err := reg.Admit(mb, ma.NotAfter.Add(time.Hour)); !errors.Is(err, identity.ErrExpired) || !strings.Contains(err.Error(), "bob") {
		t.Fatalf("admit expired bob: %v", err)
	}

	// The same list again is stale; the next one (number 2) keeps alice.
	if _, err := rv.Next([]*identity.CRL{c}); !errors.Is(err, identity.ErrStaleCRL) {
		t.Fatalf("same CRL again: %v, want ErrStaleCRL", err)
	}
	serialB, _ := new(big.Int).SetString(mb.Serial(), 16)
	crl2, err := ca1.RevokeCRL(crl, []*big.Int{serialB}, now)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := reg.ParseCRL("Org1", crl2)
	if err != nil || c2.Number.Int64() != 2 || len(c2.Serials()) != 2 {
		t.Fatalf("second CRL: %v number %v serials %v", err, c2.Number, c2.Serials())
	}
	rv2, err := rv.Next([]*identity.CRL{c2})
	if err != nil || rv2.Check(ma) == nil || rv2.Check(mb) == nil || rv2.Sequence() != 2 {
		t.Fatalf("after the second CRL: %v", err)
	}
}

func TestAdminMajorityUnderRevocation(t *testing.T) {
	ca1, _ := identity.NewCA("Org1", identity.ECDSAP256)
	ca2, _ := identity.NewCA("Org2", identity.ECDSAP256)
	reg, _ := identity.NewRegistry([]identity.Org{{ID: "Org1", CACerts: [][]byte{ca1.CertDER()}}, {ID: "Org2", CACerts: [][]byte{ca2.CertDER()}}})
	a1, _ := ca1.Issue("admin1", identity.RoleAdmin, identity.ECDSAP256)
	a2, _ := ca2.Issue("admin2", identity.RoleAdmin, identity.ECDSAP256)
	msg := []byte("update")
	env, err := api.SignConfigUpdate(msg, a1, a2)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.AdminMajority(msg, env.Signatures); err != nil {
		t.Fatal(err)
	}
	m2, _ := reg.Member(a2.Identity())
	serial, _ := new(big.Int).SetString(m2.Serial(), 16)
	crl, _ := ca2.RevokeCRL(nil, []*big.Int{serial}, time.Now())
	c, err := reg.ParseCRL("Org2", crl)
	if err != nil {
		t.Fatal(err)
	}
	rv, _ := (*identity.Revocations)(nil).Next([]*identity.CRL{c})
	err = reg.AdminMajorityUnder(rv, msg, env.Signatures)
	if !errors.Is(err, identity.ErrNoMajority) || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("a revoked admin counted: %v", err)
	}
}
