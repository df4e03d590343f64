package external

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"strconv"
)

// Package is what the orgs agree on for an external contract: where its
// server is and who it is. Its exact bytes (Encode) travel in the
// definition transaction as the contract's code, so the definition's code
// hash is the SHA-256 of them (Hash): a peer never dials a server, or
// trusts a certificate, that the channel did not agree on.
type Package struct {
	// Address is the server's host:port.
	Address string `json:"address"`
	// RootCert is one or more PEM certificates; the server's TLS
	// certificate must chain to one of them.
	RootCert string `json:"root_cert"`
	// ServerName is the name the server's certificate must carry;
	// default the host of the address dialled.
	ServerName string `json:"server_name,omitempty"`
	// OrgAddresses maps an org to the host:port its peers dial instead of
	// Address: each org may run its own replica of the server, as each
	// runs its own peers. The certificate rules are the same for all.
	OrgAddresses map[string]string `json:"org_addresses,omitempty"`

	roots *x509.CertPool
}

// MaxPackageBytes bounds an encoded package.
const MaxPackageBytes = 64 << 10

// Encode checks p and returns its bytes, the contract's code.
func (p *Package) Encode() ([]byte, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// DecodePackage decodes and checks a package's bytes. Any input gives a
// package or an error wrapping ErrPackage.
func DecodePackage(raw []byte) (*Package, error) {
	if len(raw) > MaxPackageBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrPackage, len(raw), MaxPackageBytes)
	}
	p := &Package{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return nil, fmt.Errorf("%w: %v (want JSON with address, root_cert and optionally server_name, org_addresses)", ErrPackage, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the package", ErrPackage)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Package) check() error {
	if err := checkAddress("address", p.Address); err != nil {
		return err
	}
	for org, addr := range p.OrgAddresses {
		if org == "" {
			return fmt.Errorf("%w: org_addresses: an empty org name (for %q)", ErrPackage, addr)
		}
		if err := checkAddress("org_addresses["+org+"]", addr); err != nil {
			return err
		}
	}
	roots := x509.NewCertPool()
	rest, n := []byte(p.RootCert), 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return fmt.Errorf("%w: root_cert: certificate %d: %v", ErrPackage, n+1, err)
		}
		roots.AddCert(c)
		n++
	}
	if n == 0 {
		return fmt.Errorf("%w: root_cert holds no PEM certificate: want the CA (or the certificate) the server's TLS certificate chains to", ErrPackage)
	}
	p.roots = roots
	return nil
}

func checkAddress(what, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%w: %s %q, want host:port", ErrPackage, what, addr)
	}
	return nil
}

// forOrg returns the package as org's peers use it: Address replaced by
// org's own address, if it has one.
func (p *Package) forOrg(org string) *Package {
	a, ok := p.OrgAddresses[org]
	if !ok || org == "" {
		return p
	}
	q := *p
	q.Address = a
	return &q
}

// serverName is the name the server's certificate must carry.
func (p *Package) serverName() string {
	if p.ServerName != "" {
		return p.ServerName
	}
	host, _, _ := net.SplitHostPort(p.Address)
	return host
}

// Hash returns the SHA-256 of raw in lowercase hex: a definition's code
// hash for the package raw.
func Hash(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
