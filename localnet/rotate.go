package localnet

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

// Rotated says what Rotate replaced: the node's previous signing and TLS
// certificates, kept beside the new ones (for their revocation), and
// the serials of both.
type Rotated struct {
	OldCert, OldTLSCert        string // copies of the previous certificates
	OldSerial, NewSerial       string
	OldTLSSerial, NewTLSSerial string
}

// Rotate issues peer or orderer name a new signing identity and a new TLS
// certificate from its org's CA (same name, role, algorithm and TLS host
// names, new keys and serials) and writes them over the files its node
// file names. The previous certificates are kept as <file>.<serial>.old.
// The running node keeps using the previous ones until it restarts
// (StopNode, Up); both are valid until the old ones are revoked.
func Rotate(l *Layout, name string) (Rotated, error) {
	n, ok := l.Node(name)
	if !ok {
		return Rotated{}, fmt.Errorf("localnet: no node %q in the network in %s", name, l.Dir)
	}
	if n.Role != identity.RolePeer && n.Role != identity.RoleOrderer {
		return Rotated{}, fmt.Errorf("localnet: %s is a %s: only peers' and orderers' certificates rotate", name, n.Kind())
	}
	cfg, err := node.LoadNode(n.Config)
	if err != nil {
		return Rotated{}, err
	}
	ca, err := loadCA(l.Dir, n.Org)
	if err != nil {
		return Rotated{}, err
	}
	oldSign, err := readCertFile(cfg.Identity.Cert)
	if err != nil {
		return Rotated{}, err
	}
	oldTLS, err := readCertFile(cfg.TLS.Cert)
	if err != nil {
		return Rotated{}, err
	}
	s, err := ca.Issue(name, n.Role, ca.Algorithm())
	if err != nil {
		return Rotated{}, fmt.Errorf("localnet: %w", err)
	}
	cert, key, err := s.MarshalPEM()
	if err != nil {
		return Rotated{}, fmt.Errorf("localnet: %w", err)
	}
	hosts := append([]string{}, oldTLS.DNSNames...)
	for _, ip := range oldTLS.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	tcert, tkey, err := ca.IssueTLS(name, n.Role, hosts)
	if err != nil {
		return Rotated{}, fmt.Errorf("localnet: %w", err)
	}
	r := Rotated{
		OldCert:      fmt.Sprintf("%s.%x.old", cfg.Identity.Cert, oldSign.SerialNumber),
		OldTLSCert:   fmt.Sprintf("%s.%x.old", cfg.TLS.Cert, oldTLS.SerialNumber),
		OldSerial:    oldSign.SerialNumber.Text(16),
		OldTLSSerial: oldTLS.SerialNumber.Text(16),
	}
	for _, c := range []struct{ from, to string }{{cfg.Identity.Cert, r.OldCert}, {cfg.TLS.Cert, r.OldTLSCert}} {
		raw, err := os.ReadFile(c.from)
		if err != nil {
			return Rotated{}, err
		}
		if err := writeFile(c.to, raw, 0o644); err != nil {
			return Rotated{}, err
		}
	}
	// Keys before certificates: a node that starts in between finds a
	// certificate that does not match its key and refuses to start,
	// rather than running with a mixed pair.
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{cfg.Identity.Key, key, 0o600}, {cfg.TLS.Key, tkey, 0o600}, {cfg.Identity.Cert, cert, 0o644}, {cfg.TLS.Cert, tcert, 0o644}} {
		if err := writeFile(f.path, f.data, f.mode); err != nil {
			return Rotated{}, err
		}
	}
	newSign, err := readCertFile(cfg.Identity.Cert)
	if err != nil {
		return Rotated{}, err
	}
	newTLS, err := readCertFile(cfg.TLS.Cert)
	if err != nil {
		return Rotated{}, err
	}
	r.NewSerial, r.NewTLSSerial = newSign.SerialNumber.Text(16), newTLS.SerialNumber.Text(16)
	return r, nil
}

// StopNode stops node name's process (SIGTERM, then SIGKILL after
// timeout), if it runs; Up starts it again.
func StopNode(l *Layout, name string, timeout time.Duration) error {
	n, ok := l.Node(name)
	if !ok {
		return fmt.Errorf("localnet: no node %q in the network in %s", name, l.Dir)
	}
	return l.stop([]Node{n}, timeout)[0].err
}

func readCertFile(path string) (*x509.Certificate, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("localnet: %w", err)
	}
	b, _ := pem.Decode(raw)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("localnet: %s holds no PEM certificate", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("localnet: %s: %w", path, err)
	}
	return c, nil
}

// writeFile writes data to path through a temporary file renamed over it.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("localnet: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("localnet: %w", err)
	}
	return nil
}
