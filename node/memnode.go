package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/strand-ledger/strand/internal/buildinfo"
	"github.com/strand-ledger/strand/memnode"
)

// Memnode is a running memory node process: the served tiers and the
// metrics endpoint.
type Memnode struct {
	srv     *memnode.Server
	metrics *metricsServer
	log     *slog.Logger
	lock    *dirLock
}

// StartMemnode loads the TLS material, opens the tiers in cfg.DataDir/state
// (starting at the storage tier's savepoint) and serves them.
func StartMemnode(cfg *MemnodeConfig) (*Memnode, error) {
	opts := &slog.HandlerOptions{Level: logLevels[cfg.Log.Level]}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if cfg.Log.Format == "json" {
		h = slog.NewJSONHandler(os.Stderr, opts)
	}
	log := slog.New(h).With("node", "memnode", "listen", cfg.Listen)
	log.Info("starting", append([]any{"role", "memnode"}, buildinfo.Read().LogAttrs()...)...)
	serverTLS, err := memnodeTLS(cfg.TLS, cfg.CAs, true)
	if err != nil {
		return nil, err
	}
	// One process per data dir, as for peers and orderers: a second one
	// is told who holds it, and net status finds a memory node started
	// by hand by the pid it records.
	lock, err := lockDataDir(cfg.DataDir, "memory node "+cfg.Listen)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("node: memnode listen %s: %w", cfg.Listen, err), lock.release())
	}
	srv, err := memnode.Serve(filepath.Join(cfg.DataDir, "state"), lis, memnode.ServerOptions{Tiers: cfg.Tiers(), TLS: serverTLS, MaxMessageBytes: cfg.MaxMessageMB << 20, Writer: cfg.Writer,
		Limits: cfg.Limits(), WatchBufferBytes: cfg.WatchBufferKB << 10})
	if err != nil {
		_ = lis.Close()
		return nil, errors.Join(err, lock.release())
	}
	m := &Memnode{srv: srv, log: log, lock: lock}
	if m.metrics, err = startMetrics(cfg.Metrics, false, "memnode", memnodeReady, log, NewStructCollector("memnode", func() any { return srv.Metrics() })); err != nil {
		return nil, errors.Join(err, srv.Close(), lock.release())
	}
	t := srv.Metrics().Tiers
	log.Info("memory node serving", "height", t.Height, "storageSavepoint", t.Durable, "memoryMB", cfg.MemoryMB, "metrics", m.metrics.Addr())
	return m, nil
}

// memnodeReady is a memory node's /readyz: its metrics endpoint starts
// only once the tiers are open and served, and stops when they close.
func memnodeReady(context.Context) error { return nil }

// Addr returns the address the memory node serves on.
func (m *Memnode) Addr() string { return m.srv.Addr() }

// Close stops serving and flushes the memory tier to storage.
func (m *Memnode) Close() error {
	err := m.srv.Close()
	if merr := m.metrics.Close(); err == nil {
		err = merr
	}
	if lerr := m.lock.release(); err == nil {
		err = lerr
	}
	m.log.Info("memory node stopped", "err", err)
	return err
}

// memnodeTLS builds one side of the mutual TLS between a peer and its
// memory node from a key pair and CA files.
func memnodeTLS(kp KeyPair, caFiles []string, server bool) (*tls.Config, error) {
	cert, err := os.ReadFile(kp.Cert)
	if err != nil {
		return nil, fmt.Errorf("node: memnode TLS certificate: %w", err)
	}
	key, err := os.ReadFile(kp.Key)
	if err != nil {
		return nil, fmt.Errorf("node: memnode TLS key: %w", err)
	}
	var cas [][]byte
	for _, f := range caFiles {
		ca, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("node: memnode TLS CA: %w", err)
		}
		cas = append(cas, ca)
	}
	s, c, err := TLSConfigs(cert, key, cas)
	if err != nil {
		return nil, err
	}
	if server {
		return s, nil
	}
	return c, nil
}
