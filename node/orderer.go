package node

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
	"github.com/strand-ledger/strand/internal/grpctune"
	"github.com/strand-ledger/strand/orderer"
	"github.com/strand-ledger/strand/orderer/cut"
)

// Orderer is a running ordering process: the channels it orders (each
// an ordererChannel: block store, registry, and an orderer that is the
// single-node consenter when the channel has one orderer, a member of
// the channel's Raft cluster when it has more) and what they share: one
// gRPC listener routing every call by its channel (orderer.Channels), the
// connections to the other orderers (orderer.ClusterConns), the metrics
// endpoint and the lock on the data directory.
type Orderer struct {
	base
	// Orderer (and Store, in base) are those of the first channel (the
	// only one of a single-channel orderer).
	Orderer *orderer.Orderer
	// Channels route to every channel's orderer.
	Channels *orderer.Channels

	cfg      *NodeConfig
	creds    *nodeCreds
	channels channelSet[*ordererChannel] // the node file's, then those joined
	conns    *orderer.ClusterConns
	// pace is the peers' reported heights for every channel's pacing
	// (stream mode, single node): one peer commits all its channels on
	// the same cores, so its backlog counts them all.
	pace   cut.Pacer
	joinMu sync.Mutex // serializes joins and leaves
	// clusterMax is the batch.maxBytes the cluster server receives blocks
	// of: the largest of the channels at start.
	clusterMax int
}

// StartOrderer starts the orderer a node config describes: with channel,
// one channel whose ledger is in dataDir (blocks/, raft/); with
// channels, each channel's in dataDir/channels/<id>/.
func StartOrderer(cfg *NodeConfig) (_ *Orderer, err error) {
	o := &Orderer{}
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	chs, creds, err := o.openProcess(cfg)
	if err != nil {
		return nil, err
	}
	// One connection to each other orderer, whatever channels they order
	// together: it trusts every channel's CAs and refuses a certificate
	// any of them revoked; each channel's Raft transport then serves only
	// that channel's members.
	o.conns = orderer.NewClusterConns(ExpectServer(o.trusting(creds.clientTLS), identity.RoleOrderer))
	o.cfg, o.creds = cfg, creds
	joined, err := cfg.JoinedChannels(chs)
	if err != nil {
		return nil, err
	}
	keyTables := cfg.KeyTableBytes() / int64(len(chs)+len(joined))
	var ords []*orderer.Orderer
	for i, ch := range append(chs, joined...) {
		ccfg, isJoined := cfg.forJoined(ch.Channel), i >= len(chs)
		if !isJoined {
			ccfg = cfg.forChannel(cfg.ChannelFiles()[i], ch.Channel)
		}
		c, err := o.openChannel(ccfg, ch, creds, o.conns, keyTables, isJoined)
		o.channels.add(c) // closed by Close, even half-open
		if err != nil {
			return nil, err
		}
		ords = append(ords, c.ord)
	}
	first := o.channels.list()[0]
	o.Orderer, o.Store = first.ord, first.store
	if o.Channels, err = orderer.NewChannels(ords...); err != nil {
		return nil, err
	}
	svc := o.Channels.Server()
	maxBytes := 0
	for _, c := range o.channels.list() {
		maxBytes = max(maxBytes, c.maxBytes)
	}
	o.clusterMax = maxBytes
	isOrderer := anyOrdererCert(o.registries)
	route := func(leaf *x509.Certificate) int {
		if isOrderer(leaf) == nil {
			return 1
		}
		return 0
	}
	if err := o.serve(cfg.Listen, o.trusting(creds.serverTLS), route,
		grpcServer{maxRecv: api.MaxRequestMessage, streamWindow: grpctune.ClientStreamWindow, tap: refuseCluster(isOrderer), register: func(s grpc.ServiceRegistrar) {
			api.RegisterOrdererServer(s, svc)
			o.Channels.RegisterAdmin(s)
			api.RegisterChannelAdminServer(s, &channelAdmin{org: cfg.Org, regs: o.registries, node: o, log: o.log})
		}},
		grpcServer{maxRecv: api.BlockMessage(maxBytes), register: func(s grpc.ServiceRegistrar) {
			api.RegisterOrdererServer(s, svc)
			o.Channels.RegisterCluster(s)
			o.Channels.RegisterAdmin(s)
		}},
	); err != nil {
		return nil, err
	}
	collectors := []prometheus.Collector{NewStructCollector("tls", func() any { return o.TLSMetrics() }), &o.channels}
	if o.metrics, err = startMetrics(cfg.Metrics, cfg.Profile, cfg.Name, o.ready, o.log, collectors...); err != nil {
		return nil, err
	}
	for _, c := range o.channels.list() {
		o.logChannel(c, "orderer started")
	}
	return o, nil
}

func (o *Orderer) logChannel(c *ordererChannel, msg string) {
	consensus := "single node"
	if rc := c.ord.ConfigInfo(); len(rc.Orderers) > 0 {
		consensus = fmt.Sprintf("raft, %d orderers", len(rc.Orderers))
	}
	o.log.Info(msg, "listen", o.Addr, "height", c.ord.Height(), "channel", c.name, "consensus", consensus, "joined", c.joined)
}

// ready is the orderer's /readyz: every channel is ready.
func (o *Orderer) ready(context.Context) error {
	all := o.channels.list()
	for _, c := range all {
		if err := c.ord.Ready(); err != nil {
			if len(all) == 1 {
				return err
			}
			return fmt.Errorf("channel %s: %w", c.name, err)
		}
	}
	return nil
}

// ordererCert returns the check that a verified TLS client certificate
// is an orderer's of the channel (nil), or why not. It decides which of an
// orderer's gRPC servers serves a connection: only orderers reach the
// cluster server, whose receive limit admits whole blocks.
func ordererCert(reg *identity.Registry) func(*x509.Certificate) error {
	return func(leaf *x509.Certificate) error {
		m, err := caller.CertMember(reg, leaf)
		if err != nil {
			return err
		}
		if m.Role != identity.RoleOrderer {
			return fmt.Errorf("its role is %s, want orderer", m.Role)
		}
		return nil
	}
}

// refuseCluster is the tap of an orderer's client server: a call to the
// Cluster service (Raft messages, forwarded transactions) is refused on
// its headers, before any of its messages is read. Orderers never reach
// this server (ordererCert routes them to the cluster server), so the
// caller is not one; the refusal says which certificate and why.
func refuseCluster(isOrderer func(*x509.Certificate) error) tap.ServerInHandle {
	return func(ctx context.Context, info *tap.Info) (context.Context, error) {
		if !orderer.IsClusterMethod(info.FullMethodName) {
			return ctx, nil
		}
		who, why := "a caller without a TLS certificate", "no certificate"
		if p, ok := peer.FromContext(ctx); ok {
			if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
				leaf := ti.State.PeerCertificates[0]
				who = fmt.Sprintf("TLS certificate %q from %s", leaf.Subject.String(), p.Addr)
				if err := isOrderer(leaf); err != nil {
					why = err.Error()
				}
			}
		}
		return nil, status.Errorf(codes.PermissionDenied,
			"node: %s refused before its first message was read: the cluster service serves only the channel's orderers, and %s is not one (%s); clients and peers call the Orderer service",
			info.FullMethodName, who, why)
	}
}

// raftConfig makes this orderer a Raft member when the channel lists more
// than one orderer, nil otherwise; cfg is the config of that channel
// (NodeConfig.forChannel), whose DataDir holds the Raft log in raft/. Raft ids are positions in
// ChannelConfig.Orderers() plus one: the same on every member, and stable
// while orderers are only ever added at the end of the list.
func raftConfig(cfg *NodeConfig, ch *ChannelConfig) (*orderer.RaftConfig, error) {
	eps := ch.Orderers()
	if len(eps) < 2 && cfg.Join == "" {
		return nil, nil
	}
	rc := &orderer.RaftConfig{Dir: filepath.Join(cfg.DataDir, "raft")}
	for i, ep := range eps {
		id := uint64(i + 1)
		rc.Peers = append(rc.Peers, orderer.RaftPeer{ID: id, Org: ep.Org, Name: ep.Name, Address: ep.Cluster})
		if ep.Name == cfg.Name && ep.Org == cfg.Org {
			rc.ID = id
		}
	}
	if cfg.Join != "" {
		if err := joinConfig(cfg, ch, rc); err != nil {
			return nil, err
		}
	}
	if rc.ID == 0 {
		return nil, fmt.Errorf("%w: %s: orderer %q of org %s is not among the channel's orderers (%s), so it cannot join their Raft cluster",
			ErrConfig, cfg.file, cfg.Name, cfg.Org, ordererNames(eps))
	}
	return rc, nil
}

// joinConfig reads the config update that added this orderer (node
// config join) and sets RaftConfig.ID and Join from it.
func joinConfig(cfg *NodeConfig, ch *ChannelConfig, rc *orderer.RaftConfig) error {
	if len(rc.Peers) < 2 {
		return fmt.Errorf("%w: %s: join: channel %q has a single-node orderer; only a Raft ordering service (two or more orderers) takes new orderers",
			ErrConfig, cfg.file, ch.Channel)
	}
	raw, err := os.ReadFile(cfg.Join)
	if err != nil {
		return fmt.Errorf("%w: %s: join: %w", ErrConfig, cfg.file, err)
	}
	_, u, err := api.DecodeConfigEnvelope(raw)
	if err != nil {
		return fmt.Errorf("%w: %s: join: %s: %w", ErrConfig, cfg.file, cfg.Join, err)
	}
	if u.Channel != ch.Channel {
		return fmt.Errorf("%w: %s: join: %s updates channel %q, this orderer's channel is %q", ErrConfig, cfg.file, cfg.Join, u.Channel, ch.Channel)
	}
	rc.ID, rc.Join = 0, nil
	for _, o := range u.Orderers {
		rc.Join = append(rc.Join, orderer.RaftPeer{ID: o.ID, Org: o.Org, Name: o.Name, Address: o.Address})
		if o.Org == cfg.Org && o.Name == cfg.Name {
			rc.ID = o.ID
		}
	}
	if rc.ID == 0 {
		return fmt.Errorf("%w: %s: join: the update in %s does not name orderer %s/%s", ErrConfig, cfg.file, cfg.Join, cfg.Org, cfg.Name)
	}
	return nil
}

func ordererNames(eps []OrdererEndpoint) string {
	names := make([]string, len(eps))
	for i, ep := range eps {
		names[i] = ep.Org + "/" + ep.Name
	}
	return strings.Join(names, ", ")
}

// Close stops serving, persists what is pending in every channel and
// closes their logs and block stores.
func (o *Orderer) Close() error {
	o.stopServing()
	o.joinMu.Lock() // a join or leave under way finishes first
	defer o.joinMu.Unlock()
	var errs []error
	for _, c := range o.channels.list() {
		errs = append(errs, c.close())
	}
	if o.conns != nil {
		errs = append(errs, o.conns.Close())
	}
	o.Store = nil // the first channel's, closed above
	return o.closeRest(errs...)
}
