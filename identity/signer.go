package identity

import (
	"crypto"
	"crypto/x509"
	"fmt"

	"github.com/strand-ledger/strand/api"
)

// Signer is a member holding its private key: a client, peer, orderer or
// admin that signs proposals, endorsements, transactions or blocks.
type Signer struct {
	id   *api.Identity
	role Role
	cert *x509.Certificate
	key  crypto.Signer
	made *made // signatures made lately, when it remembers them (Remember)
}

// LoadSigner loads a signer written by MarshalPEM. The certificate must name
// org as its organisation, carry one role OU, and match the key. The chain is
// not checked here; a Registry checks it when others see the identity.
func LoadSigner(org string, certPEM, keyPEM []byte) (*Signer, error) {
	cert, key, _, err := parsePEM("signer", certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if cert.IsCA {
		return nil, fmt.Errorf("%w: %q is a CA certificate, expected a member certificate of org %q", ErrBadCertificate, cert.Subject.String(), org)
	}
	if !hasOrg(cert, org) {
		return nil, fmt.Errorf("%w: certificate %q names organisations %q, expected %q", ErrBadCertificate, cert.Subject.String(), cert.Subject.Organization, org)
	}
	role, err := roleOf(fmt.Sprintf("certificate %q", cert.Subject.String()), cert.Subject.OrganizationalUnit)
	if err != nil {
		return nil, err
	}
	return &Signer{id: &api.Identity{Org: org, Cert: cert.Raw}, role: role, cert: cert, key: key}, nil
}

// Identity returns the signer's wire identity. It returns the same pointer on
// every call; callers must treat it as read-only.
func (s *Signer) Identity() *api.Identity { return s.id }

// Org returns the signer's organisation.
func (s *Signer) Org() string { return s.id.Org }

// Role returns the role its certificate carries.
func (s *Signer) Role() Role { return s.role }

// Name returns its certificate's common name.
func (s *Signer) Name() string { return s.cert.Subject.CommonName }

// Sign signs msg. ECDSA keys sign SHA-256(msg) and return an ASN.1 DER
// signature normalised to low-S; Ed25519 keys sign msg itself.
func (s *Signer) Sign(msg []byte) ([]byte, error) {
	if s.made == nil {
		return sign(s.key, msg)
	}
	m := NewMessage(msg)
	sig, err := signMessage(s.key, &m)
	if err == nil {
		s.made.record((*[32]byte)(m.sha256()), sig)
	}
	return sig, err
}

// MarshalPEM encodes the signer's certificate and PKCS #8 private key.
func (s *Signer) MarshalPEM() (certPEM, keyPEM []byte, err error) {
	return marshalPEM(s.cert.Raw, s.key)
}
