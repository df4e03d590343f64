package identity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"net"
)

// IssueTLS generates a fresh ECDSA P-256 key and a TLS certificate for it,
// signed by the CA: CN name, O the CA's org, OU the role (so that a TLS
// peer's org and role can be checked with Registry.Member as well), usable
// for both server and client authentication. Each host becomes a subject
// alternative name: an IP address as an IP SAN, anything else as a DNS SAN.
// hosts may be empty for a certificate used only by clients. It returns the
// certificate and its PKCS #8 key, PEM encoded.
func (ca *CA) IssueTLS(name string, role Role, hosts []string) (certPEM, keyPEM []byte, err error) {
	if role == RoleMember || int(role) >= len(roleNames) {
		return nil, nil, fmt.Errorf("identity: issue TLS certificate %q for org %q: role %s cannot be issued, expected one of client, peer, orderer, admin", name, ca.org, role)
	}
	if name == "" {
		return nil, nil, fmt.Errorf("identity: issue TLS certificate for org %q: empty name", ca.org)
	}
	var ips []net.IP
	var dns []string
	for i, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
			continue
		}
		if h == "" {
			return nil, nil, fmt.Errorf("identity: issue TLS certificate %q for org %q: host %d is empty, expected a DNS name or an IP address", name, ca.org, i)
		}
		dns = append(dns, h)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("identity: TLS key for %q: %w", name, err)
	}
	tmpl, err := ca.leafTemplate(name, role)
	if err != nil {
		return nil, nil, err
	}
	tmpl.DNSNames, tmpl.IPAddresses = dns, ips
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("identity: issue TLS certificate %q for org %q: %w", name, ca.org, err)
	}
	return marshalPEM(der, key)
}
