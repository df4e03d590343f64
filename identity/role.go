package identity

import (
	"crypto/x509"
	"errors"
	"fmt"
)

// Sentinel errors, checked with errors.Is. Errors returned by this package
// wrap one of them and name the org, certificate or member concerned.
var (
	ErrUnknownOrg           = errors.New("identity: unknown org")
	ErrBadCertificate       = errors.New("identity: bad certificate")
	ErrUntrustedCertificate = errors.New("identity: untrusted certificate")
	ErrNoRole               = errors.New("identity: certificate carries no role")
	ErrBadSignature         = errors.New("identity: bad signature")
	ErrUnknownAlgorithm     = errors.New("identity: unknown algorithm")
)

// Role is what a member may do. It is carried by the certificate's OU.
type Role uint8

const (
	// RoleMember matches any role in a policy; it never appears in a
	// certificate.
	RoleMember Role = iota
	RoleClient
	RolePeer
	RoleOrderer
	RoleAdmin
)

var roleNames = [...]string{"member", "client", "peer", "orderer", "admin"}

// String returns the role's lower-case name, as written in certificates and
// policies.
func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// ParseRole parses a role name. Names are lower case, as Fabric writes them.
func ParseRole(s string) (Role, error) {
	for i, n := range roleNames {
		if s == n {
			return Role(i), nil
		}
	}
	return 0, fmt.Errorf("identity: unknown role %q, expected one of member, client, peer, orderer, admin", s)
}

// Algorithm is a signature algorithm for keys this package generates.
type Algorithm uint8

const (
	// ECDSAP256 is ECDSA on NIST P-256 over SHA-256, low-S, ASN.1 DER.
	ECDSAP256 Algorithm = iota
	// Ed25519 is pure Ed25519 (RFC 8032).
	Ed25519
)

// String returns the name ParseAlgorithm accepts.
func (a Algorithm) String() string {
	switch a {
	case ECDSAP256:
		return "ecdsa-p256"
	case Ed25519:
		return "ed25519"
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// ParseAlgorithm parses "ecdsa-p256" or "ed25519".
func ParseAlgorithm(s string) (Algorithm, error) {
	switch s {
	case "ecdsa-p256":
		return ECDSAP256, nil
	case "ed25519":
		return Ed25519, nil
	}
	return 0, fmt.Errorf("%w %q, expected one of ecdsa-p256, ed25519", ErrUnknownAlgorithm, s)
}

// roleOf returns the role a certificate's OUs carry: exactly one OU must
// name a role, and that role must not be member. OUs that name no role are
// ignored, as Fabric ignores them.
// CertRole returns the role a certificate carries (its one role OU). It
// checks nothing else: use a Registry to check the certificate itself.
func CertRole(cert *x509.Certificate) (Role, error) {
	return roleOf(fmt.Sprintf("certificate %q", cert.Subject.String()), cert.Subject.OrganizationalUnit)
}

func roleOf(subject string, ous []string) (Role, error) {
	var role Role
	n := 0
	for _, ou := range ous {
		r, err := ParseRole(ou)
		if err != nil {
			continue
		}
		role = r
		n++
	}
	switch {
	case n == 0:
		return 0, fmt.Errorf("%w: %s has OUs %q, expected exactly one of client, peer, orderer, admin", ErrNoRole, subject, ous)
	case n > 1:
		return 0, fmt.Errorf("%w: %s has %d role OUs %q, expected exactly one", ErrNoRole, subject, n, ous)
	case role == RoleMember:
		return 0, fmt.Errorf("%w: %s has OU \"member\", which only policies may name; expected one of client, peer, orderer, admin", ErrNoRole, subject)
	}
	return role, nil
}
