package identity

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"slices"
	"testing"

	"github.com/strand-ledger/strand/api"
)

func TestIssueTLS(t *testing.T) {
	ca, err := NewCA("Org1", ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueTLS("peer0.Org1", RolePeer, []string{"127.0.0.1", "localhost", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cert.DNSNames, []string{"localhost"}) {
		t.Errorf("DNS SANs %q, want [localhost]", cert.DNSNames)
	}
	if len(cert.IPAddresses) != 2 || !cert.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) || !cert.IPAddresses[1].Equal(net.IPv6loopback) {
		t.Errorf("IP SANs %v, want [127.0.0.1 ::1]", cert.IPAddresses)
	}
	if !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) || !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Errorf("ExtKeyUsage %v, want server and client auth", cert.ExtKeyUsage)
	}
	if cert.NotAfter.After(ca.cert.NotAfter) {
		t.Errorf("leaf NotAfter %v after CA NotAfter %v", cert.NotAfter, ca.cert.NotAfter)
	}
	// The key matches and the certificate is a valid member with its role.
	if _, err := LoadSigner("Org1", certPEM, keyPEM); err != nil {
		t.Fatalf("TLS pair does not load: %v", err)
	}
	reg, err := NewRegistry([]Org{{ID: "Org1", CACerts: [][]byte{ca.CertDER()}}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := reg.Member(&api.Identity{Org: "Org1", Cert: cert.Raw})
	if err != nil {
		t.Fatal(err)
	}
	if m.Role != RolePeer || m.Name != "peer0.Org1" {
		t.Errorf("member %+v, want peer peer0.Org1", m)
	}
	other, _ := NewCA("Org2", ECDSAP256)
	c2, _, err := other.IssueTLS("x", RoleClient, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = pem.Decode(c2)
	if _, err := reg.Member(&api.Identity{Org: "Org1", Cert: b.Bytes}); !errors.Is(err, ErrUntrustedCertificate) {
		t.Errorf("cert of another CA: err %v, want ErrUntrustedCertificate", err)
	}
}

func TestIssueTLSRefuses(t *testing.T) {
	ca, err := NewCA("Org1", ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		role  Role
		hosts []string
	}{
		{"", RolePeer, nil},
		{"p", RoleMember, nil},
		{"p", Role(99), nil},
		{"p", RolePeer, []string{"localhost", ""}},
	} {
		if _, _, err := ca.IssueTLS(tc.name, tc.role, tc.hosts); err == nil {
			t.Errorf("IssueTLS(%q, %v, %q) succeeded, want an error", tc.name, tc.role, tc.hosts)
		}
	}
}
