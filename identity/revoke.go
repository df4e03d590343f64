package identity

import (
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"sort"
	"strings"
	"time"
)

// Certificate revocation. Each org of a channel may have one X.509
// certificate revocation list (RFC 5280), signed by one of its CAs and
// carried in the channel's membership config (api.MembersUpdate). A
// Revocations value is the set of lists in force at one config: it is
// immutable, and a Registry holds the one in force at its node's
// committed height (SetRevocations) for the admission points, while the
// committer decides each block under the lists in force before it.
//
// A CRL is checked once, when it is parsed (ParseCRL): its signature
// against the org's CA certificates and its form. Its dates are not
// checked (no clock: every node decides alike); a newer list of an org
// must carry a larger CRL number (ErrStaleCRL).

var (
	// ErrRevoked: a certificate listed by its org's CRL in force.
	ErrRevoked = errors.New("identity: certificate revoked")
	// ErrBadCRL: a CRL that does not parse, is not signed by a CA of its
	// org, or has no CRL number.
	ErrBadCRL = errors.New("identity: bad certificate revocation list")
	// ErrStaleCRL: a CRL whose number is not above the org's list in
	// force.
	ErrStaleCRL = errors.New("identity: stale certificate revocation list")
)

// MaxCRLBytes bounds one org's CRL.
const MaxCRLBytes = 256 << 10

// CRL is one org's parsed and verified revocation list.
type CRL struct {
	Org    string
	Number *big.Int
	Raw    []byte // DER, as signed
	// revoked maps a serial (big.Int.Text(16)) to its revocation time.
	revoked map[string]time.Time
}

// Serials returns the revoked serial numbers, in hex, sorted.
func (c *CRL) Serials() []string {
	out := make([]string, 0, len(c.revoked))
	for s := range c.revoked {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// ParseCRL parses der, the CRL of org, and checks that one of org's CA
// certificates signed it and that it carries a CRL number.
func (r *Registry) ParseCRL(org string, der []byte) (*CRL, error) {
	st, ok := r.orgs.Load().m[org]
	if !ok {
		return nil, fmt.Errorf("%w: for %w %q, expected one of %s", ErrBadCRL, ErrUnknownOrg, org, strings.Join(r.Orgs(), ", "))
	}
	if len(der) > MaxCRLBytes {
		return nil, fmt.Errorf("%w: org %q: %d bytes, at most %d", ErrBadCRL, org, len(der), MaxCRLBytes)
	}
	rl, err := x509.ParseRevocationList(der)
	if err != nil {
		return nil, fmt.Errorf("%w: org %q: %v", ErrBadCRL, org, err)
	}
	if rl.Number == nil || rl.Number.Sign() < 0 {
		return nil, fmt.Errorf("%w: org %q: the list issued by %q has no CRL number", ErrBadCRL, org, rl.Issuer.String())
	}
	signed := false
	var why []string
	for _, ca := range st.cas {
		if err := rl.CheckSignatureFrom(ca); err != nil {
			why = append(why, fmt.Sprintf("%q: %v", ca.Subject.String(), err))
			continue
		}
		signed = true
		break
	}
	if !signed {
		return nil, fmt.Errorf("%w: org %q: CRL number %s issued by %q is not signed by a CA of org %q (%s)",
			ErrBadCRL, org, rl.Number, rl.Issuer.String(), org, strings.Join(why, "; "))
	}
	c := &CRL{Org: org, Number: rl.Number, Raw: der, revoked: make(map[string]time.Time, len(rl.RevokedCertificateEntries))}
	for _, e := range rl.RevokedCertificateEntries {
		if e.SerialNumber != nil {
			c.revoked[e.SerialNumber.Text(16)] = e.RevocationTime
		}
	}
	return c, nil
}

// Revocations is the membership config in force at one point of the
// chain: the CRLs (at most one per org), the orgs membership updates
// added and removed (members.go), and Seq, the membership updates
// applied to reach it. The zero value and nil are the genesis: its orgs,
// nothing revoked. It is immutable.
type Revocations struct {
	Seq  uint64
	crls map[string]*CRL
	// added maps an org a membership update added to its definition;
	// removed maps an org one removed to the sequence of that update. An
	// org in both was added, then removed: removed wins.
	added   map[string]*OrgDef
	removed map[string]uint64
}

// Next returns the revocations after an update that replaces the lists
// of the orgs of crls: each must be newer (a larger CRL number) than the
// org's list in force (ErrStaleCRL). Seq is rv's plus one.
func (rv *Revocations) Next(crls []*CRL) (*Revocations, error) {
	next := rv.clone()
	for _, c := range crls {
		if old := next.crls[c.Org]; old != nil && c.Number.Cmp(old.Number) <= 0 {
			return nil, fmt.Errorf("%w: org %q: CRL number %s, the list in force has number %s; want a larger number",
				ErrStaleCRL, c.Org, c.Number, old.Number)
		}
		next.crls[c.Org] = c
	}
	next.Seq++
	return next, nil
}

// CRLs returns the lists in force, by org.
func (rv *Revocations) CRLs() []*CRL {
	if rv == nil {
		return nil
	}
	out := make([]*CRL, 0, len(rv.crls))
	for _, c := range rv.crls {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Org < out[j].Org })
	return out
}

// Sequence returns rv.Seq (0 for nil).
func (rv *Revocations) Sequence() uint64 {
	if rv == nil {
		return 0
	}
	return rv.Seq
}

// Check returns an error if m is not a member under rv: wrapping
// ErrOrgRemoved if a membership update removed its org, ErrUnknownOrg if
// its org was added by an update rv does not include yet, ErrRevoked,
// naming the certificate (role, subject, serial, org) and the CRL, if
// m's org's list revokes m's certificate. It allocates nothing when m is
// a member.
func (rv *Revocations) Check(m *Member) error {
	if m == nil {
		return nil
	}
	if rv == nil {
		if m.late {
			return notYetMember(m, 0)
		}
		return nil
	}
	if seq, ok := rv.removed[m.Org]; ok {
		return fmt.Errorf("%w: %s certificate %q of org %q: membership update %d removed org %q from the channel",
			ErrOrgRemoved, m.Role, m.Subject, m.Org, seq, m.Org)
	}
	if m.late && rv.added[m.Org] == nil {
		return notYetMember(m, rv.Seq)
	}
	if m.serial == nil {
		return nil
	}
	c := rv.crls[m.Org]
	if c == nil || len(c.revoked) == 0 {
		return nil
	}
	at, ok := c.revoked[m.serialHex]
	if !ok {
		return nil
	}
	return fmt.Errorf("%w: %s certificate %q serial %s of org %q is revoked by %s's CRL number %s (revoked at %s)",
		ErrRevoked, m.Role, m.Subject, m.serialHex, m.Org, m.Org, c.Number, at.UTC().Format(time.RFC3339))
}

// SetRevocations sets the revocations in force at the node's committed
// height: the ones Revoked checks. Admission points (gateway, endorser,
// orderer, TLS) use it; validation of a block uses the revocations in
// force before that block, which the committer holds itself.
func (r *Registry) SetRevocations(rv *Revocations) { r.revoked.Store(rv) }

// Revocations returns the revocations SetRevocations set (nil: none).
func (r *Registry) Revocations() *Revocations { return r.revoked.Load() }

// Revoked checks m against the revocations in force (SetRevocations).
func (r *Registry) Revoked(m *Member) error { return r.revoked.Load().Check(m) }

// ExpiredError returns an error naming m's certificate if it has expired
// by now, else nil.
func ExpiredError(m *Member, now time.Time) error {
	if !now.After(m.NotAfter) {
		return nil
	}
	return fmt.Errorf("%w: %s certificate %q serial %s of org %q expired at %s, it is now %s", ErrExpired, m.Role, m.Subject, m.serialHex, m.Org,
		m.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
}

// ErrExpired: a certificate past its NotAfter at an admission point.
var ErrExpired = errors.New("identity: certificate expired")

// Admit is what an admission point checks of an identity: Member, then
// that its certificate is not revoked by the lists in force and has not
// expired by now.
func (r *Registry) Admit(m *Member, now time.Time) error {
	if err := r.Revoked(m); err != nil {
		return err
	}
	return ExpiredError(m, now)
}

// RevokeCRL returns a new CRL of the CA's org, signed by the CA, that
// lists the serials of prev (a CRL of this CA, or nil) and serials, with
// the CRL number after prev's (1 if prev is nil). Serials already listed
// keep their revocation time; new ones are revoked at now.
func (ca *CA) RevokeCRL(prev []byte, serials []*big.Int, now time.Time) ([]byte, error) {
	tmpl := &x509.RevocationList{Number: big.NewInt(1), ThisUpdate: now, NextUpdate: now.Add(validity)}
	seen := map[string]bool{}
	if prev != nil {
		rl, err := x509.ParseRevocationList(prev)
		if err != nil {
			return nil, fmt.Errorf("%w: previous CRL of org %q: %v", ErrBadCRL, ca.org, err)
		}
		if err := rl.CheckSignatureFrom(ca.cert); err != nil {
			return nil, fmt.Errorf("%w: previous CRL of org %q is not signed by its CA %q: %v", ErrBadCRL, ca.org, ca.cert.Subject.String(), err)
		}
		if rl.Number != nil {
			tmpl.Number = new(big.Int).Add(rl.Number, big.NewInt(1))
		}
		for _, e := range rl.RevokedCertificateEntries {
			tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries, x509.RevocationListEntry{SerialNumber: e.SerialNumber, RevocationTime: e.RevocationTime})
			seen[e.SerialNumber.Text(16)] = true
		}
	}
	for _, s := range serials {
		if !seen[s.Text(16)] {
			tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries, x509.RevocationListEntry{SerialNumber: s, RevocationTime: now})
			seen[s.Text(16)] = true
		}
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, ca.cert, ca.key)
	if err != nil {
		return nil, fmt.Errorf("identity: signing CRL of org %q: %w", ca.org, err)
	}
	return der, nil
}

// NewRevocations returns the membership config at sequence seq of crls
// (at most one per org; a later one of an org replaces an earlier), the
// orgs added and those removed (by the sequence of the update that
// removed each): what a node reads back from its state. The added orgs
// must be known to the registry (AddOrg) before their members are
// checked.
func NewRevocations(seq uint64, crls []*CRL, added []*OrgDef, removed map[string]uint64) *Revocations {
	rv := &Revocations{Seq: seq, crls: make(map[string]*CRL, len(crls)), added: map[string]*OrgDef{}, removed: map[string]uint64{}}
	for _, c := range crls {
		rv.crls[c.Org] = c
	}
	for _, d := range added {
		rv.added[d.ID] = d
	}
	for o, s := range removed {
		rv.removed[o] = s
	}
	return rv
}

// clone returns a copy of rv (the genesis for nil) to change.
func (rv *Revocations) clone() *Revocations {
	next := NewRevocations(0, nil, nil, nil)
	if rv != nil {
		next.Seq = rv.Seq
		maps.Copy(next.crls, rv.crls)
		maps.Copy(next.added, rv.added)
		maps.Copy(next.removed, rv.removed)
	}
	return next
}

// RevokedCert checks a TLS certificate, whose first O names its org,
// against the revocations in force (SetRevocations).
func (r *Registry) RevokedCert(cert *x509.Certificate) error {
	rv := r.revoked.Load()
	if rv == nil || len(cert.Subject.Organization) == 0 {
		return nil
	}
	org := cert.Subject.Organization[0]
	if seq, ok := rv.removed[org]; ok {
		return fmt.Errorf("%w: TLS certificate %q of org %q: membership update %d removed org %q from the channel",
			ErrOrgRemoved, cert.Subject.String(), org, seq, org)
	}
	c := rv.crls[org]
	if c == nil {
		return nil
	}
	serial := cert.SerialNumber.Text(16)
	at, ok := c.revoked[serial]
	if !ok {
		return nil
	}
	return fmt.Errorf("%w: TLS certificate %q serial %s of org %q is revoked by %s's CRL number %s (revoked at %s)",
		ErrRevoked, cert.Subject.String(), serial, org, org, c.Number, at.UTC().Format(time.RFC3339))
}
