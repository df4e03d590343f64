package identity

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/api"
)

// CacheEntries bounds the number of verdicts a Registry caches. When the
// cache is full it is dropped and refilled: a simple bound that costs one
// re-validation per identity still in use.
const CacheEntries = 65536

// MaxCertBytes bounds the certificate a Registry will look at, so that the
// cache (which keeps certificate bytes as keys) stays bounded in bytes too.
// Larger certificates are rejected without being parsed or cached.
const MaxCertBytes = 16 << 10

// Org is an organisation as the channel knows it: its ID and the DER
// certificates of the CAs that issue its members' certificates.
type Org struct {
	ID      string
	CACerts [][]byte
}

// Registry validates the identities of the channel's organisations: those
// of the genesis, fixed, and those membership updates added (AddOrg).
// Whether an org is a member at a given point of the chain is the
// Revocations' business (Check): the registry only ever learns trust
// anchors, so that a node can decide a block under the membership in
// force before it while it already knows a later one. It is Fabric's MSP
// manager. It is safe for concurrent use.
type Registry struct {
	// orgs is every org the registry knows (genesis and added), replaced
	// whole by AddOrg (copy on write) so Member reads it without a lock.
	orgs    atomic.Pointer[orgTable]
	genesis []string // the genesis orgs, sorted
	addMu   sync.Mutex
	limit   int
	keys    *keyTables
	// revoked is the revocations in force at the node's committed
	// height (SetRevocations), for admission points.
	revoked atomic.Pointer[Revocations]

	mu struct {
		sync.RWMutex
		n int // entries in all orgState.cache maps
	}
}

// orgTable is the orgs a registry knows, by ID, and their IDs sorted.
// It is immutable.
type orgTable struct {
	m   map[string]*orgState
	ids []string
}

// orgState is one org's trust anchors and its verdict cache.
type orgState struct {
	id string
	// late marks an org a membership update added: its members are
	// members only where the Revocations in force say it was added.
	late bool
	// provisional marks anchors a joining peer took from its join file
	// (AddJoiningOrg), which the chain's definition replaces.
	provisional atomic.Bool
	roots       *x509.CertPool
	cas         []*x509.Certificate // the same, to check CRL signatures
	// cache maps string(cert DER) to a verdict. Guarded by Registry.mu.
	cache map[string]verdict
	keys  *keyTables // the registry's
}

type verdict struct {
	m   *Member
	err error
}

// Member is a validated member of an organisation. Members are shared
// between callers and must be treated as read-only.
type Member struct {
	Org  string
	Role Role
	Name string // certificate CN
	// Subject is the certificate's subject, for messages.
	Subject string
	// NotAfter is the certificate's expiry. Registry.Member does not check
	// it (validation must not depend on the clock); admission points that
	// care compare it with their clock.
	NotAfter time.Time

	late      bool // of an org a membership update added (orgState.late)
	serial    *big.Int
	serialHex string // serial.Text(16): the key of CRL lookups

	ec *ecdsa.PublicKey
	ed edKey // verified under ZIP-215's rule: ed25519.go

	// Precomputed verification of ec or ed (see keyTables): tab is the
	// table or nil, ref the CLOCK referenced flag, uses the verifications
	// without a table since the last eviction, keys the registry's table
	// cache.
	tab  atomic.Pointer[keyTable]
	ref  atomic.Bool
	uses atomic.Int32
	keys *keyTables
}

// NewRegistry builds a registry over orgs. Each org needs a non-empty,
// unique ID and at least one CA certificate that parses and is a CA.
func NewRegistry(orgs []Org) (*Registry, error) {
	r := &Registry{limit: CacheEntries, keys: newKeyTables()}
	t := &orgTable{m: make(map[string]*orgState, len(orgs))}
	for i, o := range orgs {
		if o.ID == "" {
			return nil, fmt.Errorf("identity: org %d of %d has an empty ID, expected a unique non-empty ID", i, len(orgs))
		}
		if _, dup := t.m[o.ID]; dup {
			return nil, fmt.Errorf("identity: org ID %q appears twice, expected unique IDs", o.ID)
		}
		cas, err := parseCAs(o.ID, o.CACerts, ErrBadCertificate)
		if err != nil {
			return nil, err
		}
		t.m[o.ID] = r.newOrgState(o.ID, cas, false)
		t.ids = append(t.ids, o.ID)
	}
	sort.Strings(t.ids)
	r.genesis = t.ids
	r.orgs.Store(t)
	return r, nil
}

// parseCAs parses an org's CA certificates: at least one, each a CA.
// Errors wrap kind.
func parseCAs(org string, ders [][]byte, kind error) ([]*x509.Certificate, error) {
	if len(ders) == 0 {
		return nil, fmt.Errorf("%w: org %q has no CA certificates, expected at least one", kind, org)
	}
	cas := make([]*x509.Certificate, len(ders))
	for j, der := range ders {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("%w: CA certificate %d of org %q: %v", kind, j, org, err)
		}
		if !c.IsCA {
			return nil, fmt.Errorf("%w: CA certificate %d of org %q (%q) is not a CA (IsCA false)", kind, j, org, c.Subject.String())
		}
		cas[j] = c
	}
	return cas, nil
}

func (r *Registry) newOrgState(id string, cas []*x509.Certificate, late bool) *orgState {
	st := &orgState{id: id, late: late, roots: x509.NewCertPool(), cas: cas, cache: make(map[string]verdict), keys: r.keys}
	for _, c := range cas {
		st.roots.AddCert(c)
	}
	return st
}

// SetKeyTableLimit bounds the bytes of the verification tables built for
// client keys (DefaultKeyTableBytes unless set; 0 builds none). It may
// change while the registry is used: tables beyond a lower bound are
// evicted at once.
func (r *Registry) SetKeyTableLimit(bytes int64) { r.keys.setLimit(bytes) }

// DisableKeyTables makes every verification go through the library
// (crypto/ecdsa for P-256, ed25519consensus for Ed25519), for peers',
// orderers' and admins' keys too: the stock path, which the benchmarks measure beside the nodes' path so
// that a bound never flatters. Call it before the registry is used.
func (r *Registry) DisableKeyTables() { r.keys.stock = true; r.keys.limit.Store(0) }

// KeyTableMetrics is a snapshot of the registry's verification tables.
func (r *Registry) KeyTableMetrics() KeyTableMetrics { return r.keys.metrics() }

// UsesEd25519 reports whether a CA of an org the registry knows has an
// Ed25519 key: a hint that the channel's members sign with Ed25519, for
// choosing batch verification (committer.Options.VerifyBatch); answers
// never depend on it.
func (r *Registry) UsesEd25519() bool {
	for _, st := range r.orgs.Load().m {
		for _, ca := range st.cas {
			if ca.PublicKeyAlgorithm == x509.Ed25519 {
				return true
			}
		}
	}
	return false
}

// Orgs returns the IDs of the channel's member orgs under the
// revocations in force (SetRevocations), sorted: MembersUnder.
func (r *Registry) Orgs() []string { return r.MembersUnder(r.revoked.Load()) }

// Member validates id and returns the member it names. The org must be
// known (ErrUnknownOrg), the certificate must parse (ErrBadCertificate),
// chain to one of the org's CAs as of one second after its NotBefore
// (ErrUntrustedCertificate), and carry exactly one role OU other than member
// (ErrNoRole). Verdicts are cached; a cached verdict costs one map lookup
// and allocates nothing.
func (r *Registry) Member(id *api.Identity) (*Member, error) {
	if id == nil {
		return nil, fmt.Errorf("%w: nil identity", ErrBadCertificate)
	}
	st, ok := r.orgs.Load().m[id.Org]
	if !ok {
		return nil, fmt.Errorf("%w: %q, expected one of %s", ErrUnknownOrg, id.Org, strings.Join(r.Orgs(), ", "))
	}
	if len(id.Cert) > MaxCertBytes {
		return nil, fmt.Errorf("%w: certificate of %d bytes for org %q, expected at most %d", ErrBadCertificate, len(id.Cert), id.Org, MaxCertBytes)
	}
	r.mu.RLock()
	v, hit := st.cache[string(id.Cert)]
	r.mu.RUnlock()
	if hit {
		return v.m, v.err
	}
	m, err := st.validate(id.Cert)
	r.mu.Lock()
	r.storeLocked(st, string(id.Cert), verdict{m, err})
	r.mu.Unlock()
	return m, err
}

// storeLocked caches a verdict, first dropping every cached verdict when the
// cache is full. r.mu must be held for writing.
func (r *Registry) storeLocked(st *orgState, cert string, v verdict) {
	if _, ok := st.cache[cert]; ok {
		return // another goroutine validated the same certificate meanwhile
	}
	if r.mu.n >= r.limit {
		for _, o := range r.orgs.Load().m {
			clear(o.cache)
		}
		r.mu.n = 0
	}
	st.cache[cert] = v
	r.mu.n++
}

// validate checks one certificate against the org. It never reads the clock.
func (st *orgState) validate(der []byte) (*Member, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		sum := sha256.Sum256(der)
		return nil, fmt.Errorf("%w: certificate of %d bytes (sha256 %x) for org %q: %v", ErrBadCertificate, len(der), sum[:8], st.id, err)
	}
	subject := fmt.Sprintf("certificate %q", cert.Subject.String())
	if cert.IsCA {
		return nil, fmt.Errorf("%w: %s of org %q is a CA certificate, expected a member certificate", ErrBadCertificate, subject, st.id)
	}
	_, err = cert.Verify(x509.VerifyOptions{
		Roots:       st.roots,
		CurrentTime: cert.NotBefore.Add(time.Second),
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s does not chain to a CA of org %q: %v", ErrUntrustedCertificate, subject, st.id, err)
	}
	role, err := roleOf(subject, cert.Subject.OrganizationalUnit)
	if err != nil {
		return nil, err
	}
	m := &Member{Org: st.id, late: st.late, Role: role, Name: cert.Subject.CommonName, NotAfter: cert.NotAfter,
		Subject: cert.Subject.String(), serial: cert.SerialNumber, serialHex: cert.SerialNumber.Text(16)}
	alg, err := algorithmOf(cert.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("%w: %s of org %q: %v", ErrBadCertificate, subject, st.id, err)
	}
	switch alg {
	case ECDSAP256:
		m.ec = cert.PublicKey.(*ecdsa.PublicKey)
	case Ed25519:
		m.ed = newEdKey(cert.PublicKey.(ed25519.PublicKey))
	}
	m.keys = st.keys // a node's or admin's table is built at its first check (keyTables.pin)
	return m, nil
}

// Serial returns the certificate's serial number in hex.
func (m *Member) Serial() string { return m.serialHex }

// Verify checks sig over msg. ECDSA signatures must be ASN.1 DER over
// SHA-256(msg) and low-S; a high-S signature is rejected even though it is
// mathematically valid, so that signatures cannot be malleated. Ed25519
// signatures are over msg itself and checked under ZIP-215's rule (see
// ed25519.go), not crypto/ed25519's. The error wraps ErrBadSignature and
// names the member.
func (m *Member) Verify(msg, sig []byte) error {
	return m.VerifyMessage(&Message{b: msg}, sig)
}

// Message is signed bytes whose SHA-256 is computed at most once, for
// checking several ECDSA signatures over the same bytes: a transaction's
// endorsements all sign its response payload, which carries the write
// set and can be large (with 64 KB values, SHA-256 was 12% of the CPU of
// a state-DB study round, a third of it hashing each response payload
// once per endorsement). It is not safe for concurrent use.
type Message struct {
	b      []byte
	digest [sha256.Size]byte
	hashed bool
}

// NewMessage wraps msg, which must not change while the Message is used.
func NewMessage(msg []byte) Message { return Message{b: msg} }

func (m *Message) sha256() []byte {
	if !m.hashed {
		m.digest, m.hashed = sha256.Sum256(m.b), true
	}
	return m.digest[:]
}

// VerifyMessage is Verify over msg's bytes, hashing them only if no
// earlier call on msg has.
func (m *Member) VerifyMessage(msg *Message, sig []byte) error {
	if m.ec != nil {
		if !isLowS(sig) {
			return m.badSignature("ECDSA signature is malformed or high-S, expected DER (r, s) with s <= N/2")
		}
		if !m.verifyECDSA(msg.sha256(), sig) {
			return m.badSignature("ECDSA P-256 verification failed")
		}
		return nil
	}
	if len(m.ed.pub) != ed25519.PublicKeySize {
		return m.badSignature("member has no public key, expected one from Registry.Member")
	}
	if !m.verifyEd25519(msg.b, sig) {
		return m.badSignature("Ed25519 verification failed")
	}
	return nil
}

// VerifyBatch is VerifyMessage, except that an Ed25519 signature that
// passes the checks it can pass alone (length, canonical s, R and the key
// decoding) is added to b instead of being checked: nil then means valid
// if b.Verify() returns true. Failures it finds at once are
// VerifyMessage's. ECDSA signatures, and every signature when b is nil,
// are checked at once.
func (m *Member) VerifyBatch(b *Batch, msg *Message, sig []byte) error {
	if b == nil || m.ec != nil || len(m.ed.pub) != ed25519.PublicKeySize {
		return m.VerifyMessage(msg, sig)
	}
	if !b.add(m.ed, msg.b, sig) {
		return m.badSignature("Ed25519 verification failed")
	}
	return nil
}

func (m *Member) badSignature(why string) error {
	return fmt.Errorf("%w: %s %q of org %q: %s", ErrBadSignature, m.Role, m.Name, m.Org, why)
}

// verifyECDSA checks a P-256 signature over digest with the member's
// precomputed table when it has (or now earns) one, else the standard
// library; both give the same answer (identity/p256's tests).
func (m *Member) verifyECDSA(digest, sig []byte) bool {
	if m.keys != nil {
		if t := m.keys.table(m); t != nil {
			return t.ec.Verify(digest, sig)
		}
	}
	return ecdsa.VerifyASN1(m.ec, digest, sig)
}

// verifyEd25519 checks an Ed25519 signature over msg under ZIP-215's rule
// with the member's precomputed table when it has (or now earns) one, else
// ed25519consensus; both give the same answer (identity/zip215's tests).
func (m *Member) verifyEd25519(msg, sig []byte) bool {
	if m.keys != nil {
		if t := m.keys.table(m); t != nil {
			return t.ed.Verify(msg, sig)
		}
	}
	return verifyEd25519(m.ed.pub, msg, sig)
}
