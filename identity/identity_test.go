package identity

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
)

type fixture struct {
	ca1, ca2, caEd *CA
	reg            *Registry
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{ca1: mustCA(t, "Org1", ECDSAP256), ca2: mustCA(t, "Org2", ECDSAP256), caEd: mustCA(t, "Org3.example", Ed25519)}
	reg, err := NewRegistry([]Org{
		{ID: "Org1", CACerts: [][]byte{f.ca1.CertDER()}},
		{ID: "Org2", CACerts: [][]byte{f.ca2.CertDER()}},
		{ID: "Org3.example", CACerts: [][]byte{f.caEd.CertDER()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	return f
}

func mustCA(t testing.TB, org string, alg Algorithm) *CA {
	t.Helper()
	ca, err := NewCA(org, alg)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustIssue(t testing.TB, ca *CA, name string, role Role, alg Algorithm) *Signer {
	t.Helper()
	s, err := ca.Issue(name, role, alg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// customCert issues a certificate with arbitrary OUs and validity, as a
// misconfigured or hostile CA might.
func customCert(t testing.TB, ca *CA, ous []string, notBefore, notAfter time.Time, isCA bool) []byte {
	t.Helper()
	key, err := newKey(ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "custom", Organization: []string{ca.Org()}, OrganizationalUnit: ous},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  isCA,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func TestRoleAndAlgorithm(t *testing.T) {
	for r := RoleMember; r <= RoleAdmin; r++ {
		got, err := ParseRole(r.String())
		if err != nil || got != r {
			t.Errorf("ParseRole(%q) = %v, %v; want %v", r.String(), got, err, r)
		}
	}
	if _, err := ParseRole("Peer"); err == nil || !strings.Contains(err.Error(), "member, client, peer, orderer, admin") {
		t.Errorf("ParseRole(\"Peer\") error = %v, want one listing the allowed roles", err)
	}
	if s := Role(9).String(); s != "Role(9)" {
		t.Errorf("Role(9).String() = %q", s)
	}
	for _, a := range []Algorithm{ECDSAP256, Ed25519} {
		if got, err := ParseAlgorithm(a.String()); err != nil || got != a {
			t.Errorf("ParseAlgorithm(%q) = %v, %v", a.String(), got, err)
		}
	}
	if _, err := ParseAlgorithm("rsa"); err == nil || !strings.Contains(err.Error(), "ecdsa-p256, ed25519") {
		t.Errorf("ParseAlgorithm(\"rsa\") error = %v", err)
	}
}

func TestIssueRefusesMember(t *testing.T) {
	ca := mustCA(t, "Org1", ECDSAP256)
	if _, err := ca.Issue("x", RoleMember, ECDSAP256); err == nil {
		t.Fatal("Issue with RoleMember succeeded, want an error")
	}
}

func TestNewRegistryErrors(t *testing.T) {
	ca := mustCA(t, "Org1", ECDSAP256)
	leaf := mustIssue(t, ca, "peer0", RolePeer, ECDSAP256).Identity().Cert
	for _, tc := range []struct {
		name string
		orgs []Org
		want string
	}{
		{"empty ID", []Org{{ID: "", CACerts: [][]byte{ca.CertDER()}}}, "empty ID"},
		{"duplicate", []Org{{ID: "A", CACerts: [][]byte{ca.CertDER()}}, {ID: "A", CACerts: [][]byte{ca.CertDER()}}}, "appears twice"},
		{"no CA", []Org{{ID: "A"}}, "no CA certificates"},
		{"garbage CA", []Org{{ID: "A", CACerts: [][]byte{[]byte("junk")}}}, "CA certificate 0 of org \"A\""},
		{"not a CA", []Org{{ID: "A", CACerts: [][]byte{leaf}}}, "is not a CA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewRegistry(tc.orgs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewRegistry error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestMember(t *testing.T) {
	f := newFixture(t)
	peer := mustIssue(t, f.ca1, "peer0.org1", RolePeer, ECDSAP256)
	client2 := mustIssue(t, f.ca2, "user1.org2", RoleClient, ECDSAP256)
	edAdmin := mustIssue(t, f.caEd, "admin.org3", RoleAdmin, Ed25519)
	ecUnderEd := mustIssue(t, f.caEd, "orderer0", RoleOrderer, ECDSAP256)
	ca1 := f.ca1.cert
	nb, na := ca1.NotBefore, ca1.NotAfter
	for _, tc := range []struct {
		name     string
		id       *api.Identity
		wantErr  error
		wantRole Role
		wantMsg  string
	}{
		{"peer", peer.Identity(), nil, RolePeer, ""},
		{"client of Org2", client2.Identity(), nil, RoleClient, ""},
		{"ed25519 admin", edAdmin.Identity(), nil, RoleAdmin, ""},
		{"ecdsa leaf under ed25519 CA", ecUnderEd.Identity(), nil, RoleOrderer, ""},
		{"extra non-role OU ignored", &api.Identity{Org: "Org1", Cert: customCert(t, f.ca1, []string{"dept7", "client"}, nb, na, false)}, nil, RoleClient, ""},
		{"expired long ago is still a member", &api.Identity{Org: "Org1", Cert: customCert(t, f.ca1, []string{"peer"}, nb, nb.Add(time.Second), false)}, nil, RolePeer, ""},
		{"nil identity", nil, ErrBadCertificate, 0, "nil identity"},
		{"wrong org", &api.Identity{Org: "Org9", Cert: peer.Identity().Cert}, ErrUnknownOrg, 0, `"Org9", expected one of Org1, Org2, Org3.example`},
		{"cert from another org's CA", &api.Identity{Org: "Org1", Cert: client2.Identity().Cert}, ErrUntrustedCertificate, 0, `does not chain to a CA of org "Org1"`},
		{"garbage cert", &api.Identity{Org: "Org1", Cert: []byte("not a certificate")}, ErrBadCertificate, 0, "certificate of 17 bytes"},
		{"oversized cert", &api.Identity{Org: "Org1", Cert: make([]byte, MaxCertBytes+1)}, ErrBadCertificate, 0, "expected at most 16384"},
		{"empty cert", &api.Identity{Org: "Org1"}, ErrBadCertificate, 0, "certificate of 0 bytes"},
		{"CA cert as member", &api.Identity{Org: "Org1", Cert: f.ca1.CertDER()}, ErrBadCertificate, 0, "is a CA certificate"},
		{"no OU", &api.Identity{Org: "Org1", Cert: customCert(t, f.ca1, nil, nb, na, false)}, ErrNoRole, 0, "expected exactly one of"},
		{"non-role OU only", &api.Identity{Org: "Org1", Cert: customCert(t, f.ca1, []string{"dept7"}, nb, na, false)}, ErrNoRole, 0, "dept7"},
		{"two role OUs", &api.Identity{Org: "Org1", Cert: customCert(t, f.ca1, []string{"peer", "admin"}, nb, na, false)}, ErrNoRole, 0, "2 role OUs"},
		{"member OU", &api.Identity{Org: "Org1", Cert: customCert(t, f.ca1, []string{"member"}, nb, na, false)}, ErrNoRole, 0, "only policies"},
		{"issued before the CA was valid", &api.Identity{Org: "Org1", Cert: customCert(t, f.ca1, []string{"peer"}, nb.Add(-time.Hour), na, false)}, ErrUntrustedCertificate, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := f.reg.Member(tc.id)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("Member error = %v, want %v containing %q", err, tc.wantErr, tc.wantMsg)
				}
				if m != nil {
					t.Fatalf("Member returned %+v with an error", m)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Role != tc.wantRole || m.Org != tc.id.Org {
				t.Fatalf("Member = %s/%s, want %s/%s", m.Org, m.Role, tc.id.Org, tc.wantRole)
			}
			if m.NotAfter.IsZero() {
				t.Fatal("Member.NotAfter is zero")
			}
		})
	}
}

// highS returns sig with s replaced by N-s: still a valid ECDSA signature,
// but the malleated twin that Verify must reject.
func highS(t *testing.T, sig []byte) []byte {
	var v ecdsaSig
	if _, err := asn1.Unmarshal(sig, &v); err != nil {
		t.Fatal(err)
	}
	v.S.Sub(p256Order, v.S)
	out, err := asn1.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestVerify(t *testing.T) {
	f := newFixture(t)
	msg := []byte("proposal response payload")
	for _, tc := range []struct {
		name string
		ca   *CA
		alg  Algorithm
	}{
		{"ecdsa", f.ca1, ECDSAP256},
		{"ed25519", f.caEd, Ed25519},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustIssue(t, tc.ca, "peer0", RolePeer, tc.alg)
			m, err := f.reg.Member(s.Identity())
			if err != nil {
				t.Fatal(err)
			}
			sig, err := s.Sign(msg)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Verify(msg, sig); err != nil {
				t.Fatalf("Verify good signature: %v", err)
			}
			tamperedMsg := append([]byte(nil), msg...)
			tamperedMsg[0] ^= 1
			tamperedSig := append([]byte(nil), sig...)
			tamperedSig[len(sig)-1] ^= 1
			bad := []struct {
				name     string
				msg, sig []byte
			}{
				{"tampered message", tamperedMsg, sig},
				{"tampered signature", msg, tamperedSig},
				{"empty signature", msg, nil},
				{"truncated signature", msg, sig[:len(sig)-1]},
				{"trailing byte", msg, append(append([]byte(nil), sig...), 0)},
			}
			if tc.alg == ECDSAP256 {
				hs := highS(t, sig)
				digest := sha256.Sum256(msg)
				if !ecdsa.VerifyASN1(m.ec, digest[:], hs) {
					t.Fatal("high-S twin does not verify with crypto/ecdsa; test is broken")
				}
				bad = append(bad, struct {
					name     string
					msg, sig []byte
				}{"high-S", msg, hs})
			}
			for _, b := range bad {
				err := m.Verify(b.msg, b.sig)
				if !errors.Is(err, ErrBadSignature) || !strings.Contains(err.Error(), `"peer0"`) {
					t.Errorf("%s: Verify error = %v, want ErrBadSignature naming the member", b.name, err)
				}
			}
		})
	}
}

func TestSignIsLowS(t *testing.T) {
	s := mustIssue(t, mustCA(t, "Org1", ECDSAP256), "c", RoleClient, ECDSAP256)
	for i := range 300 {
		sig, err := s.Sign([]byte(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		if !isLowS(sig) {
			t.Fatalf("signature %d is high-S", i)
		}
	}
	// lowSSignature must repair a high-S signature.
	sig, _ := s.Sign([]byte("x"))
	fixed, err := lowSSignature(highS(t, sig))
	if err != nil || !bytes.Equal(fixed, sig) {
		t.Fatalf("lowSSignature(highS(sig)) = %x, %v; want %x", fixed, err, sig)
	}
}

func TestPEMRoundTrip(t *testing.T) {
	for _, alg := range []Algorithm{ECDSAP256, Ed25519} {
		t.Run(alg.String(), func(t *testing.T) {
			ca := mustCA(t, "Org1", alg)
			caCert, caKey, err := ca.MarshalPEM()
			if err != nil {
				t.Fatal(err)
			}
			ca2, err := LoadCA("Org1", caCert, caKey)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ca2.CertDER(), ca.CertDER()) || ca2.Org() != "Org1" {
				t.Fatal("loaded CA differs")
			}
			reg, err := NewRegistry([]Org{{ID: "Org1", CACerts: [][]byte{ca.CertDER()}}})
			if err != nil {
				t.Fatal(err)
			}
			s := mustIssue(t, ca2, "peer1", RolePeer, alg) // issued by the loaded CA
			certPEM, keyPEM, err := s.MarshalPEM()
			if err != nil {
				t.Fatal(err)
			}
			s2, err := LoadSigner("Org1", certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			if s2.Role() != RolePeer || s2.Org() != "Org1" || s2.Name() != "peer1" || !bytes.Equal(s2.Identity().Cert, s.Identity().Cert) {
				t.Fatalf("loaded signer = %s/%s/%s", s2.Org(), s2.Role(), s2.Name())
			}
			if s2.Identity() != s2.Identity() {
				t.Fatal("Identity returns a new pointer each call")
			}
			m, err := reg.Member(s2.Identity())
			if err != nil {
				t.Fatal(err)
			}
			sig, err := s2.Sign([]byte("m"))
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Verify([]byte("m"), sig); err != nil {
				t.Fatal(err)
			}

			// Mismatches and wrong kinds are refused.
			other := mustIssue(t, ca, "peer2", RolePeer, alg)
			_, otherKey, _ := other.MarshalPEM()
			if _, err := LoadSigner("Org1", certPEM, otherKey); err == nil || !strings.Contains(err.Error(), "does not match") {
				t.Errorf("LoadSigner with another key: %v", err)
			}
			if _, err := LoadSigner("Org2", certPEM, keyPEM); !errors.Is(err, ErrBadCertificate) {
				t.Errorf("LoadSigner for the wrong org: %v", err)
			}
			if _, err := LoadCA("Org1", certPEM, keyPEM); !errors.Is(err, ErrBadCertificate) {
				t.Errorf("LoadCA with a leaf: %v", err)
			}
			if _, err := LoadCA("Org2", caCert, caKey); !errors.Is(err, ErrBadCertificate) {
				t.Errorf("LoadCA for the wrong org: %v", err)
			}
			if _, err := LoadSigner("Org1", []byte("junk"), keyPEM); !errors.Is(err, ErrBadCertificate) {
				t.Errorf("LoadSigner with junk PEM: %v", err)
			}
		})
	}
}

func TestNegativeCache(t *testing.T) {
	f := newFixture(t)
	id := &api.Identity{Org: "Org1", Cert: []byte("garbage")}
	_, err1 := f.reg.Member(id)
	_, err2 := f.reg.Member(&api.Identity{Org: "Org1", Cert: []byte("garbage")})
	if err1 == nil || err1 != err2 {
		t.Fatalf("second lookup returned %v, want the cached error %v", err2, err1)
	}
	// The same bytes under another org are a different verdict.
	if _, err := f.reg.Member(&api.Identity{Org: "Org2", Cert: []byte("garbage")}); err == err1 || !strings.Contains(err.Error(), `"Org2"`) {
		t.Fatalf("Org2 lookup returned %v", err)
	}
	if n := f.reg.mu.n; n != 2 {
		t.Fatalf("cache holds %d verdicts, want 2", n)
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = f.reg.Member(id) })
	if allocs != 0 {
		t.Fatalf("cached negative Member allocates %v times, want 0", allocs)
	}
}

func TestCacheBound(t *testing.T) {
	f := newFixture(t)
	f.reg.limit = 3
	for i := range 10 {
		_, _ = f.reg.Member(&api.Identity{Org: "Org1", Cert: []byte{byte(i)}})
		if n := f.reg.mu.n; n > 3 || n < 1 {
			t.Fatalf("after %d lookups cache holds %d, want 1..3", i+1, n)
		}
	}
	total := 0
	for _, o := range f.reg.orgs.Load().m {
		total += len(o.cache)
	}
	if total != f.reg.mu.n {
		t.Fatalf("cache maps hold %d, counter says %d", total, f.reg.mu.n)
	}
}

func TestMemberCachedAllocs(t *testing.T) {
	f := newFixture(t)
	s := mustIssue(t, f.ca1, "peer0", RolePeer, ECDSAP256)
	m1, err := f.reg.Member(s.Identity())
	if err != nil {
		t.Fatal(err)
	}
	copyID := &api.Identity{Org: "Org1", Cert: append([]byte(nil), s.Identity().Cert...)}
	if m2, _ := f.reg.Member(copyID); m2 != m1 {
		t.Fatal("equal identity did not hit the cache")
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = f.reg.Member(copyID) }); a != 0 {
		t.Fatalf("cached Member allocates %v times, want 0", a)
	}
	msg := []byte("m")
	sig, _ := s.Sign(msg)
	digest := sha256.Sum256(msg)
	if err := m1.Verify(msg, sig); err != nil { // the first check builds the table
		t.Fatal(err)
	}
	tab := m1.tab.Load()
	if tab == nil {
		t.Fatal("peer member has no verification table after its first check")
	}
	if !raceEnabled { // sync.Pool drops items under the race detector
		raw := testing.AllocsPerRun(100, func() { tab.ec.Verify(digest[:], sig) })
		if a := testing.AllocsPerRun(100, func() { _ = m1.Verify(msg, sig) }); a > raw {
			t.Fatalf("ECDSA Verify allocates %v times, its table alone %v", a, raw)
		}
	}
	ed := mustIssue(t, f.caEd, "peer1", RolePeer, Ed25519)
	me, _ := f.reg.Member(ed.Identity())
	edSig, _ := ed.Sign(msg)
	if a := testing.AllocsPerRun(100, func() { _ = me.Verify(msg, edSig) }); a != 0 {
		t.Fatalf("Ed25519 Verify allocates %v times, want 0", a)
	}
}

func TestConcurrentMember(t *testing.T) {
	f := newFixture(t)
	f.reg.limit = 16 // force evictions under concurrency too
	var ids []*api.Identity
	for i := range 24 {
		ca := []*CA{f.ca1, f.ca2, f.caEd}[i%3]
		ids = append(ids, mustIssue(t, ca, fmt.Sprintf("n%d", i), Role(1+i%4), Algorithm(i%2)).Identity())
	}
	ids = append(ids, &api.Identity{Org: "Org1", Cert: []byte("junk")}, &api.Identity{Org: "Nope"})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := ids[(g+i)%len(ids)]
				m, err := f.reg.Member(id)
				if (err == nil) != (id.Org != "Nope" && len(id.Cert) > 4) {
					t.Errorf("Member(%s) = %v, %v", id.Org, m, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestVerifyMessage checks one Message against the signatures of members
// of different orgs and algorithms, good and bad, in an order where a bad
// signature comes before good ones: the cached hash must serve them all.
func TestVerifyMessage(t *testing.T) {
	f := newFixture(t)
	payload := []byte("response payload signed by every endorser")
	signers := []*Signer{
		mustIssue(t, f.ca1, "peer0", RolePeer, ECDSAP256),
		mustIssue(t, f.ca2, "peer0", RolePeer, ECDSAP256),
		mustIssue(t, f.caEd, "peer0", RolePeer, Ed25519),
	}
	msg := NewMessage(payload)
	for i, s := range signers {
		m, err := f.reg.Member(s.Identity())
		if err != nil {
			t.Fatal(err)
		}
		other, err := signers[(i+1)%len(signers)].Sign(payload)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.VerifyMessage(&msg, other); !errors.Is(err, ErrBadSignature) {
			t.Errorf("signer %d: another member's signature: err = %v, want ErrBadSignature", i, err)
		}
		sig, err := s.Sign(payload)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.VerifyMessage(&msg, sig); err != nil {
			t.Errorf("signer %d: its own signature over the cached message: %v", i, err)
		}
		tampered := NewMessage(append([]byte("x"), payload...))
		if err := m.VerifyMessage(&tampered, sig); !errors.Is(err, ErrBadSignature) {
			t.Errorf("signer %d: signature over other bytes: err = %v, want ErrBadSignature", i, err)
		}
	}
}
