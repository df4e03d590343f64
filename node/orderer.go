package node

import (
	"google.golang.org/grpc"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/orderer"
)

// Orderer is a running ordering node (single-node consenter).
type Orderer struct {
	base
	Orderer *orderer.Orderer
}

// StartOrderer starts the orderer a node config describes.
func StartOrderer(cfg *NodeConfig) (_ *Orderer, err error) {
	o := &Orderer{}
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	ch, err := o.open(cfg)
	if err != nil {
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
		Channel: ch.Channel, Registry: reg, Signer: signer, Batch: ch.OrdererBatch(), Store: o.Store, Log: o.log,
		Genesis: ch.Genesis(),
	}); err != nil {
		return nil, err
	}
	serverTLS, _, err := LoadTLS(cfg, ch)
	if err != nil {
		return nil, err
	}
	if err := o.serve(cfg.Listen, serverTLS, func(s *grpc.Server) {
		api.RegisterOrdererServer(s, orderer.NewServer(o.Orderer))
	}); err != nil {
		return nil, err
	}
	if o.metrics, err = startMetrics(cfg.Metrics, o.log,
		NewStructCollector("orderer", func() any { return o.Orderer.Metrics() }),
		NewStructCollector("blockstore", func() any { return o.Store.Stats() }),
	); err != nil {
		return nil, err
	}
	o.log.Info("orderer started", "listen", o.Addr, "height", o.Orderer.Height(), "channel", ch.Channel)
	return o, nil
}

// Close stops serving, persists what is pending and closes the log.
func (o *Orderer) Close() error {
	o.stopServing()
	var errs []error
	if o.Orderer != nil {
		errs = append(errs, o.Orderer.Close())
	}
	return o.closeRest(errs...)
}
