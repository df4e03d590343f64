package node

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/tap"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/buildinfo"
	"github.com/strand-ledger/strand/internal/gctune"
	"github.com/strand-ledger/strand/internal/grpctune"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/mux"
)

// base is what every node has: a name and address, a log, a block store in
// its data directory, mutual-TLS gRPC servers on one listener and a
// metrics server.
type base struct {
	Name  string
	Addr  string // where the gRPC server listens
	Store *ledger.BlockStore

	log     *slog.Logger
	lis     *roleListener
	srvs    []*grpc.Server
	metrics *metricsServer
	lock    *dirLock // on the data directory, released last
	wg      sync.WaitGroup
	// regs are the registries (memberships and revocations) of the
	// channels opened so far, read at TLS handshakes, which may begin
	// while later channels open.
	regs atomic.Pointer[[]*identity.Registry]
	// joined are the TLS verifiers of the channels joined while the node
	// runs (their CAs are not in the listener's configuration), read at
	// TLS handshakes.
	joined atomic.Pointer[[]*verifier]
}

// start names the node, makes its log, logs its start and applies its
// garbage-collector settings.
func (b *base) start(cfg *NodeConfig) {
	b.Name, b.log = cfg.Name, cfg.Logger()
	b.log.Info("starting", append([]any{"role", cfg.Role, "config", cfg.file}, buildinfo.Read().LogAttrs()...)...)
	gctune.Apply(cfg.GCPercent(), cfg.MemoryLimitMB())
}

// openProcess loads the node's credentials and channel files, locks its
// data directory and checks its layout: what its channels share. The
// credentials are read first, so that a missing or wrong certificate is
// reported as such even when the data directory is busy. The TLS
// configurations trust the CAs of every channel's orgs: one listener
// serves them all (and an orderer reaches each other orderer over one
// connection; a peer's channels dial with their own, openChannel).
func (b *base) openProcess(cfg *NodeConfig) ([]*ChannelConfig, *nodeCreds, error) {
	b.start(cfg)
	chs, err := cfg.LoadChannels()
	if err != nil {
		return nil, nil, err
	}
	creds := &nodeCreds{}
	if creds.signer, err = cfg.Signer(); err != nil {
		return nil, nil, err
	}
	all := &ChannelConfig{Channel: chs[0].Channel}
	for _, ch := range chs {
		all.Orgs = append(all.Orgs, ch.Orgs...)
	}
	if creds.serverTLS, creds.clientTLS, err = LoadTLS(cfg, all); err != nil {
		return nil, nil, err
	}
	if b.lock, err = lockDataDir(cfg.DataDir, cfg.Name); err != nil {
		return nil, nil, err
	}
	if err := cfg.checkLayout(chs); err != nil {
		return nil, nil, err
	}
	return chs, creds, nil
}

// registries are the registries of the channels opened so far.
func (b *base) registries() []*identity.Registry {
	if r := b.regs.Load(); r != nil {
		return *r
	}
	return nil
}

// addRegistry adds a channel's registry to registries.
func (b *base) addRegistry(reg *identity.Registry) {
	regs := append(slices.Clone(b.registries()), reg)
	b.regs.Store(&regs)
}

// removeRegistry takes a channel's registry out of registries (the node
// left the channel).
func (b *base) removeRegistry(reg *identity.Registry) {
	regs := slices.DeleteFunc(slices.Clone(b.registries()), func(r *identity.Registry) bool { return r == reg })
	b.regs.Store(&regs)
}

// joinedTrust are the verifiers of the channels joined at runtime.
func (b *base) joinedTrust() []*verifier {
	if v := b.joined.Load(); v != nil {
		return *v
	}
	return nil
}

// setJoinedTrust adds v (add) or takes it away.
func (b *base) setJoinedTrust(v *verifier, add bool) {
	vs := slices.Clone(b.joinedTrust())
	if add {
		vs = append(vs, v)
	} else {
		vs = slices.DeleteFunc(vs, func(x *verifier) bool { return x == v })
	}
	b.joined.Store(&vs)
}

// trustJoined has the node trust the CAs of ch, a channel it joins while
// it runs (they are not in its listener's configuration), and returns
// the verifier to take away (setJoinedTrust) when it leaves.
func (b *base) trustJoined(ch *ChannelConfig) (*verifier, error) {
	cas, err := channelCAs(ch)
	if err != nil {
		return nil, err
	}
	v, err := newVerifier(cas)
	if err != nil {
		return nil, err
	}
	b.setJoinedTrust(v, true)
	return v, nil
}

// trusting is withRevocations over the node's channels, those it joins
// and leaves while it runs included.
func (b *base) trusting(conf *tls.Config) *tls.Config {
	return withRevocations(conf, b.registries, b.joinedTrust)
}

// nodeCreds are a node's signing identity and TLS configurations.
type nodeCreds struct {
	signer               *identity.Signer
	serverTLS, clientTLS *tls.Config
}

// grpcServer is one of a node's gRPC servers (see roleListener): its
// receive limit, an optional tap (run on a call's headers, before any of
// its messages is read) and its services, whose unary methods are also
// served over api.Mux (package mux).
type grpcServer struct {
	maxRecv int
	// streamWindow, if set, replaces grpctune.Window as the stream
	// flow-control window (grpctune.ClientStreamWindow for callers that
	// are not trusted with more).
	streamWindow int32
	tap          tap.ServerInHandle
	register     func(grpc.ServiceRegistrar)
}

// serve listens on addr and starts one gRPC server per entry of servers;
// route picks the server for a connection by its verified client
// certificate (nil: always the first).
func (b *base) serve(addr string, serverTLS *tls.Config, route func(*x509.Certificate) int, servers ...grpcServer) error {
	if route == nil {
		route = func(*x509.Certificate) int { return 0 }
	}
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("node: listen %s: %w", addr, err)
	}
	lis := newRoleListener(tcp, serverTLS, len(servers), route, b.log)
	b.lis, b.Addr = lis, lis.Addr().String()
	for i, s := range servers {
		opts := append(grpctune.ServerOptions(), grpc.Creds(handshaken{}), grpc.MaxRecvMsgSize(s.maxRecv))
		if s.streamWindow > 0 {
			opts = append(opts, grpc.StaticStreamWindowSize(s.streamWindow))
		}
		if s.tap != nil {
			opts = append(opts, grpc.InTapHandle(s.tap))
		}
		srv := grpc.NewServer(opts...)
		s.register(mux.NewServer(srv))
		b.srvs = append(b.srvs, srv)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if err := srv.Serve(lis.outs[i]); err != nil {
				b.log.Error("gRPC server stopped", "err", err)
			}
		}()
	}
	return nil
}

// MetricsAddr returns where /metrics is served, "" if nowhere.
func (b *base) MetricsAddr() string { return b.metrics.Addr() }

// stopServing stops the gRPC servers and their listener and waits for the
// node's goroutines.
func (b *base) stopServing() {
	for _, srv := range b.srvs {
		srv.Stop()
	}
	if b.lis != nil {
		b.lis.Close()
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
	errs = append(errs, b.lock.release())
	return errors.Join(errs...)
}
