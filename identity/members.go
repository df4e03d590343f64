package identity

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/strand-ledger/strand/api"
)

// Orgs that join and leave a running channel. A membership update
// (api.MembersUpdate) may add orgs, each with its definition (OrgDef: its
// CA and TLS CA certificates; its admins are its certificates with the
// admin role OU, as for a genesis org), and remove orgs. The membership
// in force at a point of the chain is a Revocations value: the genesis
// orgs, minus those removed, plus those added (MembersUnder). Check
// refuses a member of an org that is not a member there, so every door
// that already checks revocation (admission, endorsement, validation,
// admin majorities, TLS) honours adds and removals from the same block.
//
// Invariants:
//   - The registry learns an added org's trust anchors (AddOrg) once the
//     update is decided, and never forgets them: a node may decide a
//     block under an older membership than the newest it knows, where
//     Check refuses the org as not (yet, or any more) a member.
//   - An org's name names one org for the channel's life: an org removed
//     cannot be added again (ErrOrgRemoved), so a certificate an old
//     definition issued never becomes valid again.

var (
	// ErrOrgRemoved: an identity of an org a membership update removed,
	// or an update that adds an org by a name once removed.
	ErrOrgRemoved = errors.New("identity: org removed from the channel")
	// ErrAlreadyMember: an update that adds an org that is a member.
	ErrAlreadyMember = errors.New("identity: org already a member of the channel")
	// ErrBadCA: an added org's definition whose CA certificates do not
	// parse, are not CAs, or do not name the org.
	ErrBadCA = errors.New("identity: bad CA certificate in org definition")
	// ErrLastOrg: an update that would leave the channel without orgs.
	ErrLastOrg = errors.New("identity: removing the channel's last org")
)

// OrgDef is an org's definition as a membership update adds it: its ID,
// the DER certificates of the CAs that issue its members' certificates,
// those of the CAs that issue its TLS certificates, and its peers that
// other orgs' gateways ask to endorse (api.MembersOrg.Peers; the
// registry does not use them). It is immutable.
type OrgDef struct {
	ID         string
	CACerts    [][]byte
	TLSCACerts [][]byte
	Peers      []api.MembersPeer

	cas, tls []*x509.Certificate
	tlsPool  *x509.CertPool
}

// ParseOrgDef checks an org definition: at least one CA and one TLS CA
// certificate, each a CA certificate whose subject's O names the org.
// Errors wrap ErrBadCA.
func ParseOrgDef(id string, caCerts, tlsCACerts [][]byte) (*OrgDef, error) {
	d := &OrgDef{ID: id, CACerts: caCerts, TLSCACerts: tlsCACerts, tlsPool: x509.NewCertPool()}
	var err error
	if d.cas, err = parseCAs(id, caCerts, ErrBadCA); err != nil {
		return nil, err
	}
	if d.tls, err = parseCAs(id, tlsCACerts, ErrBadCA); err != nil {
		return nil, fmt.Errorf("TLS CAs: %w", err)
	}
	for _, c := range append(slices.Clone(d.cas), d.tls...) {
		if !hasOrg(c, id) {
			return nil, fmt.Errorf("%w: CA certificate %q names organisations %q, expected %q", ErrBadCA, c.Subject.String(), c.Subject.Organization, id)
		}
	}
	for _, c := range d.tls {
		d.tlsPool.AddCert(c)
	}
	return d, nil
}

// ParseMembersOrg is ParseOrgDef of an update's org definition, its
// peers kept.
func ParseMembersOrg(o api.MembersOrg) (*OrgDef, error) {
	d, err := ParseOrgDef(o.ID, o.CACerts, o.TLSCACerts)
	if err != nil {
		return nil, err
	}
	d.Peers = slices.Clone(o.Peers)
	return d, nil
}

// AddOrg makes d's CAs trusted for d's org (its members are members where
// the Revocations in force added it: Check). Adding the same definition
// again is a no-op; an org the registry knows under other CAs, a genesis
// org included, is ErrAlreadyMember.
func (r *Registry) AddOrg(d *OrgDef) error { return r.addOrg(d, false) }

// AddJoiningOrg is AddOrg for a peer of an org that joins the channel,
// before its node has seen the update that adds it (node: join): the
// anchors are provisional, and the chain's definition, when AddOrg
// brings it, replaces them, so the chain stays the authority.
func (r *Registry) AddJoiningOrg(d *OrgDef) error { return r.addOrg(d, true) }

func (r *Registry) addOrg(d *OrgDef, provisional bool) error {
	r.addMu.Lock()
	defer r.addMu.Unlock()
	t := r.orgs.Load()
	if st, ok := t.m[d.ID]; ok {
		switch {
		case st.late && sameCerts(st.cas, d.cas):
			if !provisional {
				st.provisional.Store(false)
			}
			return nil
		case !st.provisional.Load() || provisional:
			return fmt.Errorf("%w: org %q is known with other CA certificates", ErrAlreadyMember, d.ID)
		}
	}
	if old, ok := t.m[d.ID]; ok { // provisional anchors the chain replaces
		r.mu.Lock()
		r.mu.n -= len(old.cache)
		r.mu.Unlock()
	}
	next := &orgTable{m: make(map[string]*orgState, len(t.m)+1)}
	for id, st := range t.m {
		next.m[id] = st
	}
	st := r.newOrgState(d.ID, d.cas, true)
	st.provisional.Store(provisional)
	next.m[d.ID] = st
	for id := range next.m {
		next.ids = append(next.ids, id)
	}
	sort.Strings(next.ids)
	r.orgs.Store(next)
	return nil
}

func sameCerts(a, b []*x509.Certificate) bool {
	return slices.EqualFunc(a, b, func(x, y *x509.Certificate) bool { return bytes.Equal(x.Raw, y.Raw) })
}

// MembersUnder returns the IDs of the member orgs under rv, sorted: the
// genesis orgs and those rv added, less those rv removed.
func (r *Registry) MembersUnder(rv *Revocations) []string {
	var ids []string
	for _, o := range r.genesis {
		if _, gone := rv.removedAt(o); !gone {
			ids = append(ids, o)
		}
	}
	if rv != nil {
		for o := range rv.added {
			if _, gone := rv.removed[o]; !gone {
				ids = append(ids, o)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

func (rv *Revocations) removedAt(org string) (uint64, bool) {
	if rv == nil {
		return 0, false
	}
	s, ok := rv.removed[org]
	return s, ok
}

// Added returns the definitions of the orgs rv added (removed ones
// included), by ID.
func (rv *Revocations) Added() []*OrgDef {
	if rv == nil {
		return nil
	}
	out := make([]*OrgDef, 0, len(rv.added))
	for _, d := range rv.added {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Removed returns the orgs rv removed, each with the sequence of the
// update that removed it.
func (rv *Revocations) Removed() map[string]uint64 {
	out := map[string]uint64{}
	if rv != nil {
		for o, s := range rv.removed {
			out[o] = s
		}
	}
	return out
}

// MembersChange is what one membership update changes: the CRLs it
// replaces (parsed by ParseCRL), the orgs it adds and those it removes.
type MembersChange struct {
	CRLs   []*CRL
	Add    []*OrgDef
	Remove []string
}

// ParseMembersChange parses what u changes: its CRLs (ParseCRL: each
// signed by a CA of its org) and the definitions of the orgs it adds
// (ParseOrgDef). Which orgs are members is NextMembers' business.
func (r *Registry) ParseMembersChange(u *api.MembersUpdate) (MembersChange, error) {
	ch := MembersChange{CRLs: make([]*CRL, len(u.CRLs)), Remove: u.Remove}
	var err error
	for i, c := range u.CRLs {
		if ch.CRLs[i], err = r.ParseCRL(c.Org, c.CRL); err != nil {
			return ch, err
		}
	}
	for _, o := range u.Add {
		d, err := ParseMembersOrg(o)
		if err != nil {
			return ch, err
		}
		ch.Add = append(ch.Add, d)
	}
	return ch, nil
}

// NextMembers returns the membership config after the update ch, applied
// to rv: each removed org must be a member (ErrUnknownOrg), and one must
// remain (ErrLastOrg); each added org must not be a member
// (ErrAlreadyMember) nor have been removed (ErrOrgRemoved); each CRL must
// be of a member under rv and newer than its org's list in force
// (ErrStaleCRL). Seq is rv's plus one. It does not register the added
// orgs (AddOrg).
func (r *Registry) NextMembers(rv *Revocations, ch MembersChange) (*Revocations, error) {
	members := r.MembersUnder(rv)
	for _, c := range ch.CRLs {
		if !slices.Contains(members, c.Org) {
			return nil, r.notMember(rv, c.Org, "CRL for")
		}
	}
	next, err := rv.Next(ch.CRLs) // a copy, Seq+1
	if err != nil {
		return nil, err
	}
	for _, o := range ch.Remove {
		if !slices.Contains(members, o) {
			return nil, r.notMember(rv, o, "removing")
		}
		next.removed[o] = rv.Sequence()
	}
	if len(r.MembersUnder(next)) == 0 {
		return nil, fmt.Errorf("%w: removing %s would leave the channel no member org", ErrLastOrg, strings.Join(ch.Remove, ", "))
	}
	for _, d := range ch.Add {
		if seq, gone := rv.removedAt(d.ID); gone {
			return nil, fmt.Errorf("%w: membership update %d removed org %q; an org's name is not reused, add it under a new one", ErrOrgRemoved, seq, d.ID)
		}
		if slices.Contains(members, d.ID) {
			return nil, fmt.Errorf("%w: org %q (members: %s)", ErrAlreadyMember, d.ID, strings.Join(members, ", "))
		}
		if st, ok := r.orgs.Load().m[d.ID]; ok && !st.late {
			return nil, fmt.Errorf("%w: org %q is a genesis org", ErrAlreadyMember, d.ID)
		}
		next.added[d.ID] = d
	}
	return next, nil
}

// notMember is the error for an org that is not a member under rv.
func (r *Registry) notMember(rv *Revocations, org, doing string) error {
	if seq, gone := rv.removedAt(org); gone {
		return fmt.Errorf("%w: %s org %q: membership update %d removed it", ErrOrgRemoved, doing, org, seq)
	}
	return fmt.Errorf("%w: %s org %q, expected one of %s", ErrUnknownOrg, doing, org, strings.Join(r.MembersUnder(rv), ", "))
}

// notYetMember is Check's error for a member of an org added by an
// update after sequence seq.
func notYetMember(m *Member, seq uint64) error {
	return fmt.Errorf("%w: %s certificate %q of org %q: the org is not a member of the channel after membership update %d (it is added by a later one)",
		ErrUnknownOrg, m.Role, m.Subject, m.Org, seq)
}

// VerifyAddedTLS checks a TLS certificate chain, leaf first, of an org a
// membership update added, against that org's TLS CAs in the membership
// in force (SetRevocations): the chain must verify for usage (and host,
// when not empty), and the leaf's first O must name the org. Genesis
// orgs' TLS CAs are the node's TLS configuration's (node.TLSConfigs).
func (r *Registry) VerifyAddedTLS(certs []*x509.Certificate, host string, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return fmt.Errorf("%w: no TLS certificate", ErrUntrustedCertificate)
	}
	leaf := certs[0]
	if len(leaf.Subject.Organization) == 0 {
		return fmt.Errorf("%w: TLS certificate %q names no org", ErrUntrustedCertificate, leaf.Subject.String())
	}
	org := leaf.Subject.Organization[0]
	rv := r.revoked.Load()
	var d *OrgDef
	if rv != nil {
		d = rv.added[org]
	}
	if d == nil {
		return fmt.Errorf("%w: TLS certificate %q of org %q: the org was not added to the channel", ErrUnknownOrg, leaf.Subject.String(), org)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: d.tlsPool, Intermediates: inter, DNSName: host, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return fmt.Errorf("%w: TLS certificate %q of added org %q: %v", ErrUntrustedCertificate, leaf.Subject.String(), org, err)
	}
	return r.RevokedCert(leaf)
}
