package identity

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
)

// p256Order is the order N of P-256 and p256HalfOrder is N/2, big-endian in
// 32 bytes: a signature is low-S when s <= N/2.
var (
	p256Order     = elliptic.P256().Params().N
	p256HalfOrder = func() (b [32]byte) {
		new(big.Int).Rsh(p256Order, 1).FillBytes(b[:])
		return b
	}()
)

// newKey generates a private key for alg.
func newKey(alg Algorithm) (crypto.Signer, error) {
	switch alg {
	case ECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case Ed25519:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	}
	return nil, fmt.Errorf("%w %d, expected ecdsa-p256 or ed25519", ErrUnknownAlgorithm, uint8(alg))
}

// algorithmOf returns the algorithm of a public key, or an error naming the
// key type when strand does not support it.
func algorithmOf(pub any) (Algorithm, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return 0, fmt.Errorf("ECDSA key on curve %s, expected P-256", k.Curve.Params().Name)
		}
		return ECDSAP256, nil
	case ed25519.PublicKey:
		return Ed25519, nil
	}
	return 0, fmt.Errorf("public key of type %T, expected ECDSA P-256 or Ed25519", pub)
}

// CertAlgorithm is the algorithm of cert's key; ErrUnknownAlgorithm if
// strand has none for it.
func CertAlgorithm(cert *x509.Certificate) (Algorithm, error) {
	alg, err := algorithmOf(cert.PublicKey)
	if err != nil {
		return 0, fmt.Errorf("%w: certificate %q: %v", ErrUnknownAlgorithm, cert.Subject.String(), err)
	}
	return alg, nil
}

// sign signs msg with key: ECDSA over SHA-256(msg), normalised to low-S;
// Ed25519 over msg itself.
func sign(key crypto.Signer, msg []byte) ([]byte, error) {
	m := NewMessage(msg)
	return signMessage(key, &m)
}

// signMessage is sign over msg's bytes, hashing them only if no earlier
// call on msg has.
func signMessage(key crypto.Signer, msg *Message) ([]byte, error) {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		sig, err := ecdsa.SignASN1(rand.Reader, k, msg.sha256())
		if err != nil {
			return nil, fmt.Errorf("identity: ECDSA sign: %w", err)
		}
		return lowSSignature(sig)
	case ed25519.PrivateKey:
		return ed25519.Sign(k, msg.b), nil
	}
	return nil, fmt.Errorf("identity: private key of type %T, expected ECDSA P-256 or Ed25519", key)
}

type ecdsaSig struct{ R, S *big.Int }

// lowSSignature returns sig with s replaced by N-s when s > N/2.
func lowSSignature(sig []byte) ([]byte, error) {
	if isLowS(sig) {
		return sig, nil
	}
	var v ecdsaSig
	if rest, err := asn1.Unmarshal(sig, &v); err != nil || len(rest) != 0 {
		return nil, fmt.Errorf("identity: ECDSA signature of %d bytes is not ASN.1 (r, s)", len(sig))
	}
	v.S.Sub(p256Order, v.S)
	return asn1.Marshal(v)
}

// isLowS reports whether sig is a DER SEQUENCE of two INTEGERs whose second,
// s, is at most N/2. It allocates nothing. A malformed signature is not
// low-S; ecdsa.VerifyASN1 checks the rest.
func isLowS(sig []byte) bool {
	// A P-256 signature is at most 72 bytes, so every length is short form.
	if len(sig) < 2 || sig[0] != 0x30 || sig[1] >= 0x80 || int(sig[1]) != len(sig)-2 {
		return false
	}
	_, rest, ok := derInteger(sig[2:])
	if !ok {
		return false
	}
	s, rest, ok := derInteger(rest)
	if !ok || len(rest) != 0 {
		return false
	}
	for len(s) > 0 && s[0] == 0 {
		s = s[1:]
	}
	switch {
	case len(s) > len(p256HalfOrder):
		return false
	case len(s) < len(p256HalfOrder):
		return true
	}
	return bytes.Compare(s, p256HalfOrder[:]) <= 0
}

// derInteger splits a short-form DER INTEGER off b.
func derInteger(b []byte) (val, rest []byte, ok bool) {
	if len(b) < 2 || b[0] != 0x02 || b[1] == 0 || b[1] >= 0x80 || len(b) < 2+int(b[1]) {
		return nil, nil, false
	}
	n := 2 + int(b[1])
	return b[2:n], b[n:], true
}

// marshalPEM encodes a certificate and a PKCS #8 private key.
func marshalPEM(certDER []byte, key crypto.Signer) (certPEM, keyPEM []byte, err error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("identity: marshal private key: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	return certPEM, keyPEM, nil
}

// parsePEM decodes a certificate and its PKCS #8 private key and checks that
// they belong together. what names the pair in errors ("CA", "signer").
func parsePEM(what string, certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, Algorithm, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, nil, 0, fmt.Errorf("%w: %s certificate PEM has no CERTIFICATE block", ErrBadCertificate, what)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%w: %s certificate: %v", ErrBadCertificate, what, err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "PRIVATE KEY" {
		return nil, nil, 0, fmt.Errorf("identity: %s key PEM has no PRIVATE KEY (PKCS #8) block", what)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("identity: %s private key: %w", what, err)
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		return nil, nil, 0, fmt.Errorf("identity: %s private key of type %T, expected ECDSA P-256 or Ed25519", what, k)
	}
	alg, err := algorithmOf(key.Public())
	if err != nil {
		return nil, nil, 0, fmt.Errorf("identity: %s private key: %v", what, err)
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if pub, ok := key.Public().(equaler); !ok || !pub.Equal(cert.PublicKey) {
		return nil, nil, 0, fmt.Errorf("identity: %s private key does not match the public key of certificate %q", what, cert.Subject.String())
	}
	return cert, key, alg, nil
}
