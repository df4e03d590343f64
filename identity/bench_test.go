package identity

import (
	"bytes"
	"testing"
)

func benchSigner(b *testing.B, alg Algorithm) (*Signer, *Member) {
	f := newFixture(b)
	ca := f.ca1
	if alg == Ed25519 {
		ca = f.caEd
	}
	s := mustIssue(b, ca, "peer0", RolePeer, alg)
	m, err := f.reg.Member(s.Identity())
	if err != nil {
		b.Fatal(err)
	}
	return s, m
}

func BenchmarkMemberCached(b *testing.B) {
	f := newFixture(b)
	s := mustIssue(b, f.ca1, "peer0", RolePeer, ECDSAP256)
	id := s.Identity()
	if _, err := f.reg.Member(id); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := f.reg.Member(id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchVerify(b *testing.B, alg Algorithm) {
	s, m := benchSigner(b, alg)
	msg := bytes.Repeat([]byte("x"), 512)
	sig, err := s.Sign(msg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Verify(msg, sig); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyP256(b *testing.B)    { benchVerify(b, ECDSAP256) }
func BenchmarkVerifyEd25519(b *testing.B) { benchVerify(b, Ed25519) }

func BenchmarkSignP256(b *testing.B) {
	s, _ := benchSigner(b, ECDSAP256)
	msg := bytes.Repeat([]byte("x"), 512)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Sign(msg); err != nil {
			b.Fatal(err)
		}
	}
}
