package identity_test

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

// TestOrgMembership walks an org added to and another removed from a
// two-org channel: who counts under which config, the admin majority over
// the current set, and each named error.
func TestOrgMembership(t *testing.T) {
	ca1, _ := identity.NewCA("Org1", identity.ECDSAP256)
	ca2, _ := identity.NewCA("Org2", identity.ECDSAP256)
	ca3, _ := identity.NewCA("Org3", identity.ECDSAP256)
	reg, err := identity.NewRegistry([]identity.Org{{ID: "Org1", CACerts: [][]byte{ca1.CertDER()}}, {ID: "Org2", CACerts: [][]byte{ca2.CertDER()}}})
	if err != nil {
		t.Fatal(err)
	}
	admin := func(ca *identity.CA) *identity.Signer {
		s, err := ca.Issue("admin", identity.RoleAdmin, identity.ECDSAP256)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a1, a2, a3 := admin(ca1), admin(ca2), admin(ca3)
	sigs := func(msg []byte, ss ...*identity.Signer) []api.ConfigSignature {
		var out []api.ConfigSignature
		for _, s := range ss {
			sig, _ := s.Sign(msg)
			out = append(out, api.ConfigSignature{Signer: s.Identity(), Signature: sig})
		}
		return out
	}
	msg := []byte("update")

	// Bad definitions.
	if _, err := identity.ParseOrgDef("Org3", [][]byte{[]byte("junk")}, [][]byte{ca3.CertDER()}); !errors.Is(err, identity.ErrBadCA) {
		t.Fatalf("junk CA: %v, want ErrBadCA", err)
	}
	if _, err := identity.ParseOrgDef("Org3", [][]byte{ca1.CertDER()}, [][]byte{ca1.CertDER()}); !errors.Is(err, identity.ErrBadCA) || !strings.Contains(err.Error(), `expected "Org3"`) {
		t.Fatalf("Org1's CA as Org3's: %v, want ErrBadCA naming Org3", err)
	}
	leaf, _ := ca3.Issue("peer0", identity.RolePeer, identity.ECDSAP256)
	if _, err := identity.ParseOrgDef("Org3", [][]byte{ca3.CertDER()}, [][]byte{leaf.Identity().Cert}); !errors.Is(err, identity.ErrBadCA) {
		t.Fatalf("leaf as TLS CA: %v, want ErrBadCA", err)
	}
	def3, err := identity.ParseOrgDef("Org3", [][]byte{ca3.CertDER()}, [][]byte{ca3.CertDER()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.NextMembers(nil, identity.MembersChange{Add: []*identity.OrgDef{mustDef(t, ca1)}}); !errors.Is(err, identity.ErrAlreadyMember) {
		t.Fatalf("adding Org1: %v, want ErrAlreadyMember", err)
	}
	if _, err := reg.NextMembers(nil, identity.MembersChange{Remove: []string{"Org9"}}); !errors.Is(err, identity.ErrUnknownOrg) {
		t.Fatalf("removing Org9: %v, want ErrUnknownOrg", err)
	}

	// Add Org3: unknown before; its members count only where it was added.
	c3, _ := ca3.Issue("client0", identity.RoleClient, identity.ECDSAP256)
	if _, err := reg.Member(c3.Identity()); !errors.Is(err, identity.ErrUnknownOrg) {
		t.Fatalf("Org3 client before the add: %v, want ErrUnknownOrg", err)
	}
	rv1, err := reg.NextMembers(nil, identity.MembersChange{Add: []*identity.OrgDef{def3}})
	if err != nil || rv1.Sequence() != 1 {
		t.Fatalf("add Org3: %v, seq %d", err, rv1.Sequence())
	}
	if err := reg.AddOrg(def3); err != nil {
		t.Fatal(err)
	}
	if err := reg.AddOrg(def3); err != nil {
		t.Fatalf("adding the same definition again: %v", err)
	}
	if err := reg.AddJoiningOrg(mustDef(t, mustNewCA(t, "Org3"))); !errors.Is(err, identity.ErrAlreadyMember) {
		t.Fatalf("provisional Org3 under another CA over the chain's: %v, want ErrAlreadyMember", err)
	}
	if err := reg.AddOrg(mustDef(t, mustNewCA(t, "Org3"))); !errors.Is(err, identity.ErrAlreadyMember) {
		t.Fatalf("Org3 under another CA: %v, want ErrAlreadyMember", err)
	}
	// A joining peer's provisional anchors give way to the chain's.
	ca5, other5 := mustNewCA(t, "Org5"), mustNewCA(t, "Org5")
	if err := reg.AddJoiningOrg(mustDef(t, other5)); err != nil {
		t.Fatal(err)
	}
	c5, _ := ca5.Issue("client5", identity.RoleClient, identity.ECDSAP256)
	if _, err := reg.Member(c5.Identity()); !errors.Is(err, identity.ErrUntrustedCertificate) {
		t.Fatalf("Org5 client under provisional anchors of another CA: %v", err)
	}
	if err := reg.AddOrg(mustDef(t, ca5)); err != nil {
		t.Fatalf("the chain's Org5 over provisional anchors: %v", err)
	}
	if _, err := reg.Member(c5.Identity()); err != nil {
		t.Fatalf("Org5 client under the chain's anchors: %v", err)
	}
	m3, err := reg.Member(c3.Identity())
	if err != nil {
		t.Fatal(err)
	}
	if err := (*identity.Revocations)(nil).Check(m3); !errors.Is(err, identity.ErrUnknownOrg) || !strings.Contains(err.Error(), "later one") {
		t.Fatalf("Org3 client under the genesis: %v, want ErrUnknownOrg", err)
	}
	if err := rv1.Check(m3); err != nil {
		t.Fatalf("Org3 client after its add: %v", err)
	}
	if got := reg.MembersUnder(rv1); !slices.Equal(got, []string{"Org1", "Org2", "Org3"}) {
		t.Fatalf("members after the add: %v", got)
	}
	if _, err := reg.NextMembers(rv1, identity.MembersChange{Add: []*identity.OrgDef{def3}}); !errors.Is(err, identity.ErrAlreadyMember) {
		t.Fatalf("adding Org3 twice: %v, want ErrAlreadyMember", err)
	}

	// The majority is over the current set; the new org may sign from now on.
	if err := reg.AdminMajorityUnder(nil, msg, sigs(msg, a1, a3)); !errors.Is(err, identity.ErrNoMajority) {
		t.Fatalf("Org1+Org3 under the genesis: %v, want ErrNoMajority (Org3 does not count)", err)
	}
	if err := reg.AdminMajorityUnder(rv1, msg, sigs(msg, a1, a2)); err != nil {
		t.Fatalf("Org1+Org2 of three: %v", err)
	}
	if err := reg.AdminMajorityUnder(rv1, msg, sigs(msg, a1)); !errors.Is(err, identity.ErrNoMajority) || !strings.Contains(err.Error(), "want a majority: 2 of Org1, Org2, Org3") {
		t.Fatalf("Org1 alone of three: %v", err)
	}

	// Remove Org2: its members are refused, the majority is of Org1, Org3.
	rv2, err := reg.NextMembers(rv1, identity.MembersChange{Remove: []string{"Org2"}})
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := reg.Member(a2.Identity())
	if err := rv2.Check(m2); !errors.Is(err, identity.ErrOrgRemoved) || !strings.Contains(err.Error(), "membership update 1 removed org \"Org2\"") {
		t.Fatalf("Org2 admin after removal: %v, want ErrOrgRemoved", err)
	}
	if err := rv1.Check(m2); err != nil {
		t.Fatalf("Org2 admin before its removal: %v", err)
	}
	if err := reg.AdminMajorityUnder(rv2, msg, sigs(msg, a1, a2)); !errors.Is(err, identity.ErrNoMajority) {
		t.Fatalf("Org1+removed Org2: %v, want ErrNoMajority", err)
	}
	if err := reg.AdminMajorityUnder(rv2, msg, sigs(msg, a1, a3)); err != nil {
		t.Fatalf("Org1+Org3 of two: %v", err)
	}
	if _, err := reg.NextMembers(rv2, identity.MembersChange{Remove: []string{"Org2"}}); !errors.Is(err, identity.ErrOrgRemoved) {
		t.Fatalf("removing Org2 twice: %v, want ErrOrgRemoved", err)
	}
	def2, _ := identity.ParseOrgDef("Org2", [][]byte{ca2.CertDER()}, [][]byte{ca2.CertDER()})
	if _, err := reg.NextMembers(rv2, identity.MembersChange{Add: []*identity.OrgDef{def2}}); !errors.Is(err, identity.ErrOrgRemoved) {
		t.Fatalf("re-adding Org2: %v, want ErrOrgRemoved", err)
	}
	if _, err := reg.NextMembers(rv2, identity.MembersChange{Remove: []string{"Org1", "Org3"}}); !errors.Is(err, identity.ErrLastOrg) {
		t.Fatalf("removing every org: %v, want ErrLastOrg", err)
	}

	// State round trip keeps the config.
	back := identity.NewRevocations(rv2.Sequence(), rv2.CRLs(), rv2.Added(), rv2.Removed())
	if err := back.Check(m2); !errors.Is(err, identity.ErrOrgRemoved) {
		t.Fatalf("reloaded: Org2 %v", err)
	}
	if err := back.Check(m3); err != nil {
		t.Fatalf("reloaded: Org3 %v", err)
	}

	// TLS: an added org's certificate verifies against its TLS CA only
	// where it is a member; a removed org's is refused.
	reg.SetRevocations(rv1)
	certPEM, _, err := ca3.IssueTLS("peer0", identity.RolePeer, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(certPEM)
	tc, _ := x509.ParseCertificate(b.Bytes)
	if err := reg.VerifyAddedTLS([]*x509.Certificate{tc}, "localhost", x509.ExtKeyUsageServerAuth); err != nil {
		t.Fatalf("Org3 TLS after the add: %v", err)
	}
	reg.SetRevocations(nil)
	if err := reg.VerifyAddedTLS([]*x509.Certificate{tc}, "", x509.ExtKeyUsageClientAuth); !errors.Is(err, identity.ErrUnknownOrg) {
		t.Fatalf("Org3 TLS before the add: %v, want ErrUnknownOrg", err)
	}
	reg.SetRevocations(rv2)
	p2, _, _ := ca2.IssueTLS("peer0", identity.RolePeer, nil)
	b, _ = pem.Decode(p2)
	tc2, _ := x509.ParseCertificate(b.Bytes)
	if err := reg.RevokedCert(tc2); !errors.Is(err, identity.ErrOrgRemoved) {
		t.Fatalf("Org2 TLS after removal: %v, want ErrOrgRemoved", err)
	}
	if got := reg.Orgs(); !slices.Equal(got, []string{"Org1", "Org3"}) {
		t.Fatalf("Orgs in force: %v", got)
	}
}

func mustNewCA(t *testing.T, org string) *identity.CA {
	t.Helper()
	ca, err := identity.NewCA(org, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustDef(t *testing.T, ca *identity.CA) *identity.OrgDef {
	t.Helper()
	d, err := identity.ParseOrgDef(ca.Org(), [][]byte{ca.CertDER()}, [][]byte{ca.CertDER()})
	if err != nil {
		t.Fatal(err)
	}
	return d
}
