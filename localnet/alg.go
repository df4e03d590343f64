package localnet

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"

	"github.com/strand-ledger/strand/identity"
)

// Alg is the signature algorithm of the network's identities (Spec.Alg):
// that of its orderer org's CA, which every org AddOrg generates follows.
func (l *Layout) Alg() (identity.Algorithm, error) {
	path := filepath.Join(l.Dir, "crypto", OrdererOrg, "ca.pem")
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("localnet: %w", err)
	}
	b, _ := pem.Decode(raw)
	if b == nil || b.Type != "CERTIFICATE" {
		return 0, fmt.Errorf("%w: %s has no CERTIFICATE block", identity.ErrBadCertificate, path)
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", identity.ErrBadCertificate, path, err)
	}
	alg, err := identity.CertAlgorithm(cert)
	if err != nil {
		return 0, fmt.Errorf("localnet: %s: %w", path, err)
	}
	return alg, nil
}
