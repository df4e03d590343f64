package identity

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"

	"github.com/strand-ledger/strand/api"
)

// validity is how long certificates issued here are valid. A leaf never
// outlives its CA.
const validity = 10 * 365 * 24 * time.Hour

// CA issues certificates for one organisation. It holds the CA's private
// key; keep it off the nodes that only validate.
type CA struct {
	org  string
	cert *x509.Certificate
	key  crypto.Signer
}

// NewCA creates a self-signed CA for org: CN "ca.<org>", O <org>, valid for
// ten years from now.
func NewCA(org string, alg Algorithm) (*CA, error) {
	if org == "" {
		return nil, fmt.Errorf("identity: new CA: empty org ID")
	}
	key, err := newKey(alg)
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	notBefore := time.Now().Add(-time.Minute).Truncate(time.Second)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "ca." + org, Organization: []string{org}},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("identity: create CA certificate for org %q: %w", org, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("identity: parse new CA certificate for org %q: %w", org, err)
	}
	return &CA{org: org, cert: cert, key: key}, nil
}

// LoadCA loads a CA written by MarshalPEM. The certificate must be a CA
// certificate whose subject names org as its organisation, and the key must
// match it.
func LoadCA(org string, certPEM, keyPEM []byte) (*CA, error) {
	cert, key, _, err := parsePEM("CA", certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%w: %q is not a CA certificate (IsCA false), expected the CA of org %q", ErrBadCertificate, cert.Subject.String(), org)
	}
	if !hasOrg(cert, org) {
		return nil, fmt.Errorf("%w: CA certificate %q names organisations %q, expected %q", ErrBadCertificate, cert.Subject.String(), cert.Subject.Organization, org)
	}
	return &CA{org: org, cert: cert, key: key}, nil
}

// Org returns the organisation the CA issues for.
func (ca *CA) Org() string { return ca.org }

// Algorithm is the algorithm of the CA's own key.
func (ca *CA) Algorithm() Algorithm {
	alg, _ := algorithmOf(ca.key.Public()) // NewCA and LoadCA admit only keys it knows
	return alg
}

// CertDER returns the CA certificate in DER form. Callers must not modify it.
func (ca *CA) CertDER() []byte { return ca.cert.Raw }

// MarshalPEM encodes the CA certificate and its PKCS #8 private key.
func (ca *CA) MarshalPEM() (certPEM, keyPEM []byte, err error) {
	return marshalPEM(ca.cert.Raw, ca.key)
}

// Issue generates a fresh key of algorithm alg and a certificate for it:
// CN name, O the CA's org, OU the role. RoleMember is refused: it is not a
// role a member can hold.
func (ca *CA) Issue(name string, role Role, alg Algorithm) (*Signer, error) {
	if role == RoleMember || int(role) >= len(roleNames) {
		return nil, fmt.Errorf("identity: issue %q for org %q: role %s cannot be issued, expected one of client, peer, orderer, admin", name, ca.org, role)
	}
	if name == "" {
		return nil, fmt.Errorf("identity: issue for org %q: empty name", ca.org)
	}
	key, err := newKey(alg)
	if err != nil {
		return nil, err
	}
	tmpl, err := ca.leafTemplate(name, role)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("identity: issue %q for org %q: %w", name, ca.org, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("identity: parse certificate issued to %q of org %q: %w", name, ca.org, err)
	}
	return &Signer{
		id:   &api.Identity{Org: ca.org, Cert: der},
		role: role,
		cert: cert,
		key:  key,
	}, nil
}

// leafTemplate is the certificate every leaf of this CA starts from: a
// fresh serial, the CA's org as O, the role as OU, valid from a minute ago
// for the standard validity but never outside the CA's own validity, for
// signatures and for TLS in both directions.
func (ca *CA) leafTemplate(name string, role Role) (*x509.Certificate, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	notBefore := time.Now().Add(-time.Minute).Truncate(time.Second)
	if notBefore.Before(ca.cert.NotBefore) {
		notBefore = ca.cert.NotBefore
	}
	notAfter := notBefore.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			CommonName:         name,
			Organization:       []string{ca.org},
			OrganizationalUnit: []string{role.String()},
		},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}, nil
}

func newSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("identity: certificate serial number: %w", err)
	}
	return s.Add(s, big.NewInt(1)), nil
}

func hasOrg(cert *x509.Certificate, org string) bool {
	for _, o := range cert.Subject.Organization {
		if o == org {
			return true
		}
	}
	return false
}
