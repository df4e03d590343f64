package node

import (
	"errors"
	"testing"

	"github.com/strand-ledger/strand/identity"
)

// TestTLSFollowsMembership: WithRevocation, on both sides of a handshake,
// refuses an org's TLS certificate until a membership update adds the
// org (then verifies it against the org's TLS CA from the update), and
// again once an update removes it, naming why.
func TestTLSFollowsMembership(t *testing.T) {
	ord := newParty(t, "OrdererOrg", "orderer0", identity.RoleOrderer)
	p1 := issue(t, mustCA(t, "Org1"), "peer0.Org1", identity.RolePeer)
	p3 := issue(t, mustCA(t, "Org3"), "peer0.Org3", identity.RolePeer)
	reg, err := identity.NewRegistry([]identity.Org{{ID: "OrdererOrg", CACerts: [][]byte{ord.ca.CertDER()}}, {ID: "Org1", CACerts: [][]byte{p1.ca.CertDER()}}})
	if err != nil {
		t.Fatal(err)
	}
	cas := [][]byte{ord.caPEM, p1.caPEM} // the genesis orgs'
	srv, _, err := TLSConfigs(ord.cert, ord.key, cas)
	if err != nil {
		t.Fatal(err)
	}
	_, cli3, err := TLSConfigs(p3.cert, p3.key, cas) // Org3's peer trusts the genesis CAs
	if err != nil {
		t.Fatal(err)
	}
	srv = WithRevocation(srv, reg)
	if s, _ := handshake(t, srv, cli3); !errors.Is(s, ErrUntrustedPeer) {
		t.Fatalf("Org3's peer before its org is added: server error %v, want ErrUntrustedPeer", s)
	}
	def, err := identity.ParseOrgDef("Org3", [][]byte{p3.ca.CertDER()}, [][]byte{p3.ca.CertDER()})
	if err != nil {
		t.Fatal(err)
	}
	added, err := reg.NextMembers(nil, identity.MembersChange{Add: []*identity.OrgDef{def}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.AddOrg(def); err != nil {
		t.Fatal(err)
	}
	reg.SetRevocations(added)
	if s, c := handshake(t, srv, cli3); s != nil || c != nil {
		t.Fatalf("Org3's peer after the add: server error %v, client error %v", s, c)
	}
	// The client side: a node of a genesis org dialling Org3's peer.
	srv3, _, err := TLSConfigs(p3.cert, p3.key, cas)
	if err != nil {
		t.Fatal(err)
	}
	_, cli1, err := TLSConfigs(p1.cert, p1.key, cas)
	if err != nil {
		t.Fatal(err)
	}
	srv3 = WithRevocation(srv3, reg) // Org3's peer caught up: it has the add too
	if s, c := handshake(t, srv3, WithRevocation(cli1, reg)); s != nil || c != nil {
		t.Fatalf("Org1 dialling Org3's peer: server error %v, client error %v", s, c)
	}
	removed, err := reg.NextMembers(added, identity.MembersChange{Remove: []string{"Org3"}})
	if err != nil {
		t.Fatal(err)
	}
	reg.SetRevocations(removed)
	s, _ := handshake(t, srv, cli3)
	if !errors.Is(s, ErrUntrustedPeer) || !errors.Is(s, identity.ErrOrgRemoved) {
		t.Fatalf("Org3's peer after its removal: server error %v, want ErrUntrustedPeer, ErrOrgRemoved", s)
	}
	t.Log(s)
}

func mustCA(t *testing.T, org string) *identity.CA {
	t.Helper()
	ca, err := identity.NewCA(org, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}
