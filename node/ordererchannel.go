package node

import (
	"crypto/x509"
	"errors"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/orderer"
)

// ordererChannel is one channel an orderer process orders: its block
// store (in the channel's data directory, with its Raft log beside it in
// raft/), its registry and its orderer (cutter, Raft group). Nothing in
// it is shared with another channel; the process shares its gRPC
// listener, its connections to the other orderers (orderer.ClusterConns),
// its metrics endpoint and its data directory lock.
type ordererChannel struct {
	name   string
	store  *ledger.BlockStore
	reg    *identity.Registry
	ord    *orderer.Orderer
	joined bool      // at runtime (ChannelAdmin.Join), not in the node file
	hash   string    // of its genesis document
	trust  *verifier // a joined channel's CAs, for the process's TLS
	// maxBytes is the channel's batch.maxBytes (with its default).
	maxBytes int
}

func (c *ordererChannel) id() string { return c.name }

// openChannel opens channel ch of the orderer: cfg is the node's config
// for that channel (NodeConfig.forChannel, forJoined), keyTables its
// share of the node's key-table budget, conns the process's connections
// to the other orderers, joined whether it joins the channel at runtime.
// On error it returns the channel half-open too, for the caller to close.
func (o *Orderer) openChannel(cfg *NodeConfig, ch *ChannelConfig, creds *nodeCreds, conns *orderer.ClusterConns, keyTables int64, joined bool) (c *ordererChannel, err error) {
	batch := ch.OrdererBatch()
	batch.EnsureDefaults()
	c = &ordererChannel{name: ch.Channel, joined: joined, hash: ch.Hash(), maxBytes: batch.MaxBytes}
	if err := cfg.CheckChannel(ch); err != nil {
		return c, err
	}
	if joined {
		if c.trust, err = o.trustJoined(ch); err != nil {
			return c, err
		}
	}
	if c.store, err = ledger.OpenBlockStore(filepath.Join(cfg.DataDir, "blocks"), ledger.Options{Logger: o.log}); err != nil {
		return c, err
	}
	if c.reg, err = ch.Registry(); err != nil {
		return c, err
	}
	c.reg.SetKeyTableLimit(keyTables)
	o.addRegistry(c.reg)
	raft, err := raftConfig(cfg, ch)
	if err != nil {
		return c, err
	}
	if raft != nil {
		raft.Conns = conns
	}
	c.ord, err = orderer.New(orderer.Config{
		Channel: ch.Channel, Format: ch.TxFormat(), Registry: c.reg, Readers: ch.ReadRule(), Signer: creds.signer, Batch: ch.OrdererBatch(), Pacer: &o.pace,
		Checkpoints: ch.OrdererCheckpoints(), Store: c.store, Log: o.log, Genesis: ch.Genesis(), Raft: raft,
	})
	if err != nil {
		return c, err
	}
	return c, nil
}

// collectors are the channel's metrics; labelled (an orderer that orders
// several channels), each series carries the label channel, as a peer's
// do (peerChannel.collectors).
func (c *ordererChannel) collectors(labelled bool) []prometheus.Collector {
	cs := []prometheus.Collector{
		NewStructCollector("orderer", func() any { return c.ord.Metrics() }),
		NewStructCollector("blockstore", func() any { return c.store.Stats() }),
		NewStructCollector("key_tables", func() any { return c.reg.KeyTableMetrics() }),
	}
	if labelled {
		for i, col := range cs {
			cs[i] = prometheus.WrapCollectorWith(prometheus.Labels{"channel": c.name}, col)
		}
	}
	return cs
}

// close closes the orderer (it persists what is pending), then the block
// store; the caller has stopped serving.
func (c *ordererChannel) close() error {
	var errs []error
	if c.ord != nil {
		errs = append(errs, c.ord.Close())
	}
	if c.store != nil {
		errs = append(errs, c.store.Close())
	}
	return errors.Join(errs...)
}

// anyOrdererCert is ordererCert over the registries of every channel the
// process orders: a certificate that is an orderer's of any of them
// reaches the cluster server, whose Cluster service then serves it only
// its own channels' Raft groups (each transport checks its channel's
// members).
func anyOrdererCert(regs func() []*identity.Registry) func(*x509.Certificate) error {
	return func(leaf *x509.Certificate) error {
		var first error
		for _, reg := range regs() {
			err := ordererCert(reg)(leaf)
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		}
		if first == nil {
			first = errors.New("no channel opened yet")
		}
		return first
	}
}
