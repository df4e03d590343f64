package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/orderer"
)

// Orderer is a running ordering node (single-node consenter).
type Orderer struct {
	Name    string
	Addr    string
	Orderer *orderer.Orderer

	store   *ledger.BlockStore
	log     *slog.Logger
	srv     *grpc.Server
	metrics *metricsServer
	wg      sync.WaitGroup
}

// StartOrderer starts the orderer a node config describes.
func StartOrderer(cfg *NodeConfig) (_ *Orderer, err error) {
	ch, err := LoadChannel(cfg.Channel)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckChannel(ch); err != nil {
		return nil, err
	}
	o := &Orderer{Name: cfg.Name, log: cfg.Logger()}
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("node: data directory: %w", err)
	}
	if o.store, err = ledger.OpenBlockStore(filepath.Join(cfg.DataDir, "blocks"), ledger.Options{}); err != nil {
		return nil, err
	}
	reg, err := ch.Registry()
	if err != nil {
		return nil, err
	}
	signer, err := cfg.Signer()
	if err != nil {
		return nil, err
	}
	if o.Orderer, err = orderer.New(orderer.Config{
		Channel: ch.Channel, Registry: reg, Signer: signer, Batch: ch.OrdererBatch(), Store: o.store, Log: o.log,
		Genesis: ch.Genesis(),
	}); err != nil {
		return nil, err
	}
	serverTLS, _, err := LoadTLS(cfg, ch)
	if err != nil {
		return nil, err
	}
	o.srv = grpc.NewServer(grpc.Creds(credentials.NewTLS(serverTLS)))
	api.RegisterOrdererServer(o.srv, orderer.NewServer(o.Orderer))
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("node: listen %s: %w", cfg.Listen, err)
	}
	o.Addr = lis.Addr().String()
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		if err := o.srv.Serve(lis); err != nil {
			o.log.Error("gRPC server stopped", "err", err)
		}
	}()
	if o.metrics, err = startMetrics(cfg.Metrics, o.log,
		NewStructCollector("orderer", func() any { return o.Orderer.Metrics() }),
		NewStructCollector("blockstore", func() any { return o.store.Stats() }),
	); err != nil {
		return nil, err
	}
	o.log.Info("orderer started", "listen", o.Addr, "height", o.Orderer.Height(), "channel", ch.Channel)
	return o, nil
}

// MetricsAddr returns where /metrics is served, "" if nowhere.
func (o *Orderer) MetricsAddr() string { return o.metrics.Addr() }

// Close stops serving, persists what is pending and closes the log.
func (o *Orderer) Close() error {
	if o.srv != nil {
		o.srv.Stop()
	}
	o.wg.Wait()
	var errs []error
	if o.Orderer != nil {
		errs = append(errs, o.Orderer.Close())
	}
	if o.metrics != nil {
		errs = append(errs, o.metrics.Close())
	}
	if o.store != nil {
		errs = append(errs, o.store.Close())
	}
	return errors.Join(errs...)
}
