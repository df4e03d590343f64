// Package memnodetest is the memory node's test kit: TLS material from a
// fresh CA and a memory node served in-process on 127.0.0.1 over mutual
// TLS, with a client in front of it. Tests of statedb (conformance,
// metamorphic) and of the committer use it; nothing here is a fake: the
// server, the client, gRPC and TLS are the real ones.
package memnodetest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode"
	"github.com/strand-ledger/strand/node"
)

// TLS holds the two sides of mutual TLS between a memory node and its
// peer, both issued by one CA of org MemOrg.
type TLS struct {
	Server, Client *tls.Config
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
	t := &TLS{}
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
	if t.Server, _, err = node.TLSConfigs(t.ServerCert, t.ServerKey, [][]byte{t.CACert}); err != nil {
		return nil, err
	}
	if _, t.Client, err = node.TLSConfigs(t.ClientCert, t.ClientKey, [][]byte{t.CACert}); err != nil {
		return nil, err
	}
	return t, nil
}

// Served is a client whose Close also stops its in-process memory node
// (cleanly: the node flushes, so reopening dir loses nothing).
type Served struct {
	*memnode.Client
	Server *memnode.Server
}

// Close closes the client, then the node.
func (s *Served) Close() error {
	if err := s.Client.Close(); err != nil {
		return err
	}
	return s.Server.Close()
}

// Open serves the tiers in dir on a fresh 127.0.0.1 port over mutual TLS
// and connects a client with the given cache (ClientOptions.CacheBytes).
func Open(t *TLS, dir string, tiers tiered.Options, cacheBytes int64) (*Served, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv, err := memnode.Serve(dir, lis, memnode.ServerOptions{Tiers: tiers, TLS: t.Server})
	if err != nil {
		_ = lis.Close()
		return nil, err
	}
	c, err := memnode.Dial(memnode.ClientOptions{Address: srv.Addr(), TLS: t.Client, CacheBytes: cacheBytes})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("memnodetest: %w", err), srv.Close())
	}
	return &Served{Client: c, Server: srv}, nil
}

var _ statedb.DB = (*Served)(nil)
