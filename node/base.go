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

	"github.com/strand-ledger/strand/internal/gctune"
	"github.com/strand-ledger/strand/internal/grpctune"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/mux"
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
	gctune.Apply(cfg.GCPercent(), cfg.GC.MemoryLimitMB)
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
	if b.Store, err = ledger.OpenBlockStore(filepath.Join(cfg.DataDir, "blocks"), ledger.Options{Logger: b.log}); err != nil {
		return nil, err
	}
	return ch, nil
}

// serve starts the gRPC server on addr with the services register adds;
// their unary methods are also served over api.Mux (package mux). maxRecv
// bounds a received message (0: gRPC's 4 MiB): an orderer of a Raft cluster
// receives whole batches from its leader.
func (b *base) serve(addr string, serverTLS *tls.Config, maxRecv int, register func(grpc.ServiceRegistrar)) error {
	opts := append(grpctune.ServerOptions(), grpc.Creds(credentials.NewTLS(serverTLS)))
	if maxRecv > 0 {
		opts = append(opts, grpc.MaxRecvMsgSize(maxRecv))
	}
	b.srv = grpc.NewServer(opts...)
	register(mux.NewServer(b.srv))
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
