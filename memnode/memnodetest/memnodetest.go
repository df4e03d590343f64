// Package memnodetest is the memory node's test kit: TLS material from a
// fresh CA and a memory node served in-process on 127.0.0.1 over mutual
// TLS, with a client in front of it. Tests of statedb (conformance,
// metamorphic) and of the committer use it; nothing here is a fake: the
// server, the client, gRPC and TLS are the real ones.
package memnodetest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode"
)

// TLS holds the two sides of mutual TLS between a memory node and its
// peer, both issued by one CA of org MemOrg.
type TLS struct {
	Server, Client *tls.Config
	ca             *identity.CA
	pool           *x509.CertPool
	// The PEM files' contents, for configs written to disk.
	CACert, ServerCert, ServerKey, ClientCert, ClientKey []byte
}

// NewTLS issues the CA and the two certificates (SANs 127.0.0.1 and
// localhost).
func NewTLS() (*TLS, error) {
	ca, err := identity.NewCA("MemOrg", identity.ECDSAP256)
	if err != nil {
		return nil, err
	}
	t := &TLS{ca: ca}
	if t.CACert, _, err = ca.MarshalPEM(); err != nil {
		return nil, err
	}
	hosts := []string{"127.0.0.1", "localhost"}
	if t.ServerCert, t.ServerKey, err = ca.IssueTLS("memnode0", identity.RolePeer, hosts); err != nil {
		return nil, err
	}
	if t.ClientCert, t.ClientKey, err = ca.IssueTLS("peer0", identity.RolePeer, hosts); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(t.CACert) {
		return nil, errors.New("memnodetest: CA certificate does not parse")
	}
	sc, err := tls.X509KeyPair(t.ServerCert, t.ServerKey)
	if err != nil {
		return nil, err
	}
	cc, err := tls.X509KeyPair(t.ClientCert, t.ClientKey)
	if err != nil {
		return nil, err
	}
	// As node.TLSConfigs (which this package cannot import: node's
	// packages test with it), less the org checks.
	t.Server = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{sc},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	t.Client = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cc}, RootCAs: pool}
	t.pool = pool
	return t, nil
}

// ClientAs issues another client certificate of the CA, with common name
// cn, and returns the client side of mutual TLS with it.
func (t *TLS) ClientAs(cn string) (*tls.Config, error) {
	certPEM, keyPEM, err := t.ca.IssueTLS(cn, identity.RolePeer, []string{"127.0.0.1", "localhost"})
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: t.pool}, nil
}

// Node is a memory node in process that can be killed and restarted on
// the same address.
type Node struct {
	tls  *TLS
	dir  string
	opts memnode.ServerOptions
	addr string
	srv  *memnode.Server
}

// Start serves the tiers in dir on a fresh 127.0.0.1 port.
func Start(t *TLS, dir string, tiers tiered.Options) (*Node, error) {
	return StartOptions(t, dir, memnode.ServerOptions{Tiers: tiers})
}

// StartOptions is Start with the server's options (TLS is t's).
func StartOptions(t *TLS, dir string, opts memnode.ServerOptions) (*Node, error) {
	opts.TLS = t.Server
	n := &Node{tls: t, dir: dir, opts: opts, addr: "127.0.0.1:0"}
	return n, n.Restart()
}

// Addr is the node's address, the same after a restart.
func (n *Node) Addr() string { return n.addr }

// Server is the running server.
func (n *Node) Server() *memnode.Server { return n.srv }

// Kill stops the node as SIGKILL would: the memory tier is lost.
func (n *Node) Kill() error { return n.srv.Kill() }

// Close stops the node cleanly.
func (n *Node) Close() error { return n.srv.Close() }

// Restart serves the directory again, on the node's address.
func (n *Node) Restart() error {
	lis, err := net.Listen("tcp", n.addr)
	if err != nil {
		return fmt.Errorf("memnodetest: listen %s: %w", n.addr, err)
	}
	srv, err := memnode.Serve(n.dir, lis, n.opts)
	if err != nil {
		_ = lis.Close()
		return err
	}
	n.srv, n.addr = srv, srv.Addr()
	return nil
}

// Dial connects a client to the node.
func (n *Node) Dial(cacheBytes int64) (*memnode.Client, error) {
	return memnode.Dial(memnode.ClientOptions{Address: n.addr, TLS: n.tls.Client, CacheBytes: cacheBytes})
}

// DialReader connects a reader (ClientOptions.Follow) to the node.
func (n *Node) DialReader(cacheBytes int64) (*memnode.Client, error) {
	return memnode.Dial(memnode.ClientOptions{Address: n.addr, TLS: n.tls.Client, CacheBytes: cacheBytes, Follow: true})
}

// Served is a client whose Close also stops its in-process memory node
// (cleanly: the node flushes, so reopening dir loses nothing).
type Served struct {
	*memnode.Client
	Node *Node
}

// Close closes the client, then the node.
func (s *Served) Close() error {
	if err := s.Client.Close(); err != nil {
		return err
	}
	return s.Node.Close()
}

// Open serves the tiers in dir on a fresh 127.0.0.1 port over mutual TLS
// and connects a client with the given cache (ClientOptions.CacheBytes).
func Open(t *TLS, dir string, tiers tiered.Options, cacheBytes int64) (*Served, error) {
	n, err := Start(t, dir, tiers)
	if err != nil {
		return nil, err
	}
	c, err := n.Dial(cacheBytes)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("memnodetest: %w", err), n.Close())
	}
	return &Served{Client: c, Node: n}, nil
}

var _ statedb.DB = (*Served)(nil)
