package node

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/strand-ledger/strand/identity"
)

// ErrUntrustedPeer marks a TLS handshake refused because the other side's
// certificate does not chain to a CA of the channel, or names another org
// than its CA's; test with errors.Is.
var ErrUntrustedPeer = errors.New("node: TLS peer not trusted")

// TLSConfigs builds the TLS configurations of a node from its TLS key pair
// and the PEM CA certificates of every org it talks to (each entry may hold
// several certificates). Both sides use TLS 1.3 and present certificates.
// The server requires a client certificate; both sides verify the other's
// chain against the CAs, check that the certificate names the org of the
// CA that signed it, and the client checks the server's name against its
// SANs as usual. A refused certificate yields an error wrapping
// ErrUntrustedPeer that names its subject and issuer: the client's
// Handshake returns it, and the server's Handshake returns it on the
// server side (the node's listener logs it at debug level).
func TLSConfigs(certPEM, keyPEM []byte, caPEMs [][]byte) (server, client *tls.Config, err error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("node: TLS key pair: %w", err)
	}
	v, err := newVerifier(caPEMs)
	if err != nil {
		return nil, nil, err
	}
	server = &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		// No ClientCAs: a client whose certificate is from an unknown CA
		// then still sends it, and the refusal can name it.
		// Requested, not required: VerifyConnection refuses a missing
		// certificate with an error that says which CAs are wanted.
		ClientAuth: tls.RequestClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return v.verify(cs.PeerCertificates, "client", "", x509.ExtKeyUsageClientAuth)
		},
	}
	client = &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		RootCAs:      v.pool,
		// The standard verification is replaced by VerifyConnection, which
		// does the same checks with errors that name the certificate.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return v.verify(cs.PeerCertificates, "server", cs.ServerName, x509.ExtKeyUsageServerAuth)
		},
	}
	return server, client, nil
}

type verifier struct {
	pool *x509.CertPool
	orgs string
}

// newVerifier trusts the CAs in caPEMs, the PEM CA certificates of orgs
// (each entry may hold several certificates).
func newVerifier(caPEMs [][]byte) (*verifier, error) {
	pool := x509.NewCertPool()
	var orgs []string
	for i, p := range caPEMs {
		n := 0
		for rest := p; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("node: TLS CA PEM %d, certificate %d: %w", i, n, err)
			}
			if !c.IsCA {
				return nil, fmt.Errorf("node: TLS CA PEM %d, certificate %d (%q) is not a CA certificate", i, n, c.Subject.String())
			}
			pool.AddCert(c)
			orgs = append(orgs, c.Subject.Organization...)
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("node: TLS CA PEM %d holds no CERTIFICATE block, want the PEM CA certificates of an org", i)
		}
	}
	slices.Sort(orgs)
	orgs = slices.Compact(orgs)
	return &verifier{pool: pool, orgs: strings.Join(orgs, ", ")}, nil
}

// verify checks the chain of the other side, side ("client" or "server").
// host is the name the client dialled, checked against a server's SANs;
// it is "" on the server side.
func (v *verifier) verify(certs []*x509.Certificate, side, host string, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return fmt.Errorf("%w: the %s presented no certificate, want one signed by a CA of the channel (orgs %s)", ErrUntrustedPeer, side, v.orgs)
	}
	leaf := certs[0]
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	chains, err := leaf.Verify(x509.VerifyOptions{Roots: v.pool, Intermediates: inter, DNSName: host, KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		var ua x509.UnknownAuthorityError
		if errors.As(err, &ua) {
			return fmt.Errorf("%w: %s certificate %q issued by %q is not signed by any CA of the channel (orgs %s)", ErrUntrustedPeer, side, leaf.Subject.String(), leaf.Issuer.String(), v.orgs)
		}
		return fmt.Errorf("%w: %s certificate %q issued by %q: %w", ErrUntrustedPeer, side, leaf.Subject.String(), leaf.Issuer.String(), err)
	}
	for _, ch := range chains {
		root := ch[len(ch)-1]
		for _, o := range leaf.Subject.Organization {
			if slices.Contains(root.Subject.Organization, o) {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: %s certificate %q names orgs %q but is signed by the CA %q of another org", ErrUntrustedPeer, side, leaf.Subject.String(), leaf.Subject.Organization, chains[0][len(chains[0])-1].Subject.String())
}

// ExpectServer returns a copy of a client configuration from TLSConfigs
// that also requires the server's certificate to carry one of roles. A
// certificate that chains to a channel CA proves membership, not
// function: without this a client's TLS key pair could pose as an
// orderer, whose stream a channel that signs only checkpoints trusts for
// the blocks in between. So a peer dials orderers expecting RoleOrderer
// and other peers expecting RolePeer.
func ExpectServer(client *tls.Config, roles ...identity.Role) *tls.Config {
	c := client.Clone()
	verifyChain := client.VerifyConnection
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if err := verifyChain(cs); err != nil {
			return err
		}
		leaf := cs.PeerCertificates[0]
		role, err := identity.CertRole(leaf)
		if err != nil {
			return fmt.Errorf("%w: server certificate: %v", ErrUntrustedPeer, err)
		}
		if !slices.Contains(roles, role) {
			return fmt.Errorf("%w: server certificate %q has role %s, want %s", ErrUntrustedPeer, leaf.Subject.String(),
				role, roleList(roles))
		}
		return nil
	}
	return c
}

// WithRevocation returns a copy of a configuration from TLSConfigs that
// follows the channel's membership in force at the node's committed
// height (identity.Registry.SetRevocations), checked at each handshake:
// a certificate of an org a membership update added is verified against
// that org's TLS CAs (identity.Registry.VerifyAddedTLS; the
// configuration's own CAs are the genesis orgs'), and a certificate the
// revocation lists revoke, or of an org an update removed, is refused
// (identity.Registry.RevokedCert). So a revoked node or client, or one
// of a removed org, cannot open a new connection from the block after
// the update, and one of an added org can.
func WithRevocation(conf *tls.Config, reg *identity.Registry) *tls.Config {
	regs := []*identity.Registry{reg}
	return withRevocations(conf, func() []*identity.Registry { return regs }, nil)
}

// withRevocations is WithRevocation over the registries of the several
// channels a peer serves on one listener (those regs returns at each
// handshake): a certificate of an org that any of them added passes, and
// one that any of them revokes is refused.
// So a certificate revoked on one channel opens no connection to the
// peer, not even for another channel's calls: the handshake cannot know
// which channel the connection will address.
//
// joined, if not nil, returns the verifiers of the channels the node
// joined while it ran (ChannelAdmin.Join), whose CAs conf's were built
// without: a certificate that chains to one of them passes the chain
// check too.
func withRevocations(conf *tls.Config, regs func() []*identity.Registry, joined func() []*verifier) *tls.Config {
	c := conf.Clone()
	verifyChain := conf.VerifyConnection
	// A server configuration (TLSConfigs) asks for the client's
	// certificate; a client one does not.
	server := conf.ClientAuth != tls.NoClientCert
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		err := verifyChain(cs)
		if err != nil && len(cs.PeerCertificates) > 0 {
			side, host, usage := "server", cs.ServerName, x509.ExtKeyUsageServerAuth
			if server {
				side, host, usage = "client", "", x509.ExtKeyUsageClientAuth
			}
			if joined != nil {
				for _, v := range joined() {
					if v.verify(cs.PeerCertificates, side, host, usage) == nil {
						err = nil
						break
					}
				}
			}
			for _, reg := range regs() {
				if err == nil {
					break
				}
				if addErr := reg.VerifyAddedTLS(cs.PeerCertificates, host, usage); addErr == nil {
					err = nil // an added org's certificate
					break
				} else if !errors.Is(addErr, identity.ErrUnknownOrg) {
					err = fmt.Errorf("%w: %w", ErrUntrustedPeer, addErr)
				}
			}
		}
		if err != nil {
			return err
		}
		for _, reg := range regs() {
			if err := reg.RevokedCert(cs.PeerCertificates[0]); err != nil {
				return fmt.Errorf("%w: %w", ErrUntrustedPeer, err)
			}
		}
		return nil
	}
	return c
}

func roleList(roles []identity.Role) string {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = r.String()
	}
	return strings.Join(names, " or ")
}

// LoadTLS reads the node's TLS key pair and builds its TLS configurations
// over the CAs of every org of the channel.
func LoadTLS(n *NodeConfig, ch *ChannelConfig) (server, client *tls.Config, err error) {
	cert, err := os.ReadFile(n.TLS.Cert)
	if err != nil {
		return nil, nil, fmt.Errorf("node: %s: tls.cert, the node's TLS certificate: %w", n.file, err)
	}
	key, err := os.ReadFile(n.TLS.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("node: %s: tls.key, the node's TLS key: %w", n.file, err)
	}
	cas, err := channelCAs(ch)
	if err != nil {
		return nil, nil, err
	}
	server, client, err = TLSConfigs(cert, key, cas)
	if err != nil {
		return nil, nil, fmt.Errorf("node: %s: tls (%s, %s): %w", n.file, n.TLS.Cert, n.TLS.Key, err)
	}
	return server, client, nil
}

// channelCAs returns the PEM certificates of every org's CAs.
func channelCAs(ch *ChannelConfig) ([][]byte, error) {
	var cas [][]byte
	for _, o := range ch.Orgs {
		if len(o.CACerts) == 0 {
			return nil, fmt.Errorf("node: channel %q: org %q has no CA certificates loaded (load the file with LoadChannel, or set CACerts)", ch.Channel, o.ID)
		}
		for _, der := range o.CACerts {
			cas = append(cas, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
		}
	}
	return cas, nil
}

// ClientTLS returns the TLS configuration of a client (an application or
// the CLI) with the given TLS key pair files, trusting the channel's CAs
// and extraCAs (PEM; the CAs of orgs a membership update added, which
// the channel file does not list).
func ClientTLS(ch *ChannelConfig, certFile, keyFile string, extraCAs ...[]byte) (*tls.Config, error) {
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("node: client TLS certificate: %w", err)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("node: client TLS key: %w", err)
	}
	cas, err := channelCAs(ch)
	if err != nil {
		return nil, err
	}
	_, client, err := TLSConfigs(cert, key, append(cas, extraCAs...))
	if err != nil {
		return nil, fmt.Errorf("node: client TLS (%s, %s): %w", certFile, keyFile, err)
	}
	return client, nil
}
