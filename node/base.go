package node

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/ledger"
)

// base is what every node has: a name and address, a log, a block store in
// its data directory, a mutual-TLS gRPC server and a metrics server.
type base struct {
	Name  string
	Addr  string // where the gRPC server listens
	Store *ledger.BlockStore

	log     *slog.Logger
	srv     *grpc.Server
	metrics *metricsServer
	wg      sync.WaitGroup
}

// open loads and checks the node's channel and opens its block store.
func (b *base) open(cfg *NodeConfig) (*ChannelConfig, error) {
	b.Name, b.log = cfg.Name, cfg.Logger()
	ch, err := LoadChannel(cfg.Channel)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckChannel(ch); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("node: data directory: %w", err)
	}
	if b.Store, err = ledger.OpenBlockStore(filepath.Join(cfg.DataDir, "blocks"), ledger.Options{}); err != nil {
		return nil, err
	}
	return ch, nil
}

// serve starts the gRPC server on addr with the services register adds.
func (b *base) serve(addr string, serverTLS *tls.Config, register func(*grpc.Server)) error {
	b.srv = grpc.NewServer(grpc.Creds(credentials.NewTLS(serverTLS)))
	register(b.srv)
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("node: listen %s: %w", addr, err)
	}
	b.Addr = lis.Addr().String()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.srv.Serve(lis); err != nil {
			b.log.Error("gRPC server stopped", "err", err)
		}
	}()
	return nil
}

// MetricsAddr returns where /metrics is served, "" if nowhere.
func (b *base) MetricsAddr() string { return b.metrics.Addr() }

// stopServing stops the gRPC server and waits for the node's goroutines.
func (b *base) stopServing() {
	if b.srv != nil {
		b.srv.Stop()
	}
	b.wg.Wait()
}

// closeRest closes the metrics server and the block store, after the
// node's own components, and joins their errors with errs.
func (b *base) closeRest(errs ...error) error {
	if b.metrics != nil {
		errs = append(errs, b.metrics.Close())
	}
	if b.Store != nil {
		errs = append(errs, b.Store.Close())
	}
	return errors.Join(errs...)
}
