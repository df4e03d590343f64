package external

import (
	"crypto/tls"
	"fmt"
	"sync"

	"github.com/strand-ledger/strand/contract"
)

// Runtime runs external contracts: it keeps one connection per connection
// package (by hash), shared by every contract and channel that names it.
// A Runtime is safe for concurrent use.
type Runtime struct {
	opts Options
	m    counters

	mu struct {
		sync.Mutex
		conns  map[string]*conn // by package hash
		closed bool
	}
}

// New returns a Runtime with opts (zero fields defaulted).
func New(opts Options) (*Runtime, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	r := &Runtime{opts: opts}
	r.mu.conns = map[string]*conn{}
	return r, nil
}

// Options returns the runtime's options, defaults filled in.
func (r *Runtime) Options() Options { return r.opts }

// Contract returns the contract name served by the server that the
// connection package raw describes. It decodes raw (ErrPackage) but does
// not connect: the first call does, so a server that is down when the
// definition takes effect fails calls (ErrUnreachable), not the peer.
func (r *Runtime) Contract(name string, raw []byte) (*Contract, error) {
	p, err := DecodePackage(raw)
	if err != nil {
		return nil, err
	}
	p = p.forOrg(r.opts.Org)
	hash := Hash(raw)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return nil, ErrClosed
	}
	c := r.mu.conns[hash]
	if c == nil {
		if c, err = dial(r, p); err != nil {
			return nil, err
		}
		r.mu.conns[hash] = c
	}
	return &Contract{name: name, hash: hash, conn: c}, nil
}

// Close closes every connection. Calls running on them fail.
func (r *Runtime) Close() error {
	r.mu.Lock()
	conns := r.mu.conns
	r.mu.conns, r.mu.closed = nil, true
	r.mu.Unlock()
	var first error
	for _, c := range conns {
		if err := c.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Contract is one external contract: a contract.Contract whose calls run
// on its server.
type Contract struct {
	name string
	hash string
	conn *conn
}

// Hash is the SHA-256 of the contract's connection package.
func (c *Contract) Hash() string { return c.hash }

// Address is the server's address.
func (c *Contract) Address() string { return c.conn.pkg.Address }

// Invoke runs one call on the server.
func (c *Contract) Invoke(stub contract.Stub) ([]byte, error) {
	return c.conn.invoke(c.name, stub)
}

// clientTLS is the TLS configuration that dials p's server as the peer.
func clientTLS(client *tls.Config, p *Package) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: p.roots, ServerName: p.serverName()}
	if client != nil {
		cfg.Certificates = client.Certificates
		cfg.GetClientCertificate = client.GetClientCertificate
	}
	return cfg
}

func (c *Contract) String() string {
	return fmt.Sprintf("external contract %s at %s (package %s)", c.name, c.conn.pkg.Address, c.hash[:16])
}
