package memnode

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/internal/grpctune"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
)

// ServerOptions configures a Server.
type ServerOptions struct {
	// Tiers tunes the memory tier (MemoryBytes is the node's byte limit)
	// and the Pebble storage tier; the local cache is always left out.
	Tiers tiered.Options
	// TLS is the server side of mutual TLS (node.TLSConfigs). Required.
	TLS *tls.Config
	// MaxMessageBytes bounds a message either way. Default 256 MiB.
	MaxMessageBytes int
	// MaxStreams bounds the concurrent calls of one connection. Default 256.
	MaxStreams uint32
	// Limits bound each client's calls and Watch streams.
	Limits Limits
	// Writer is the common name of the one client certificate that may
	// Apply; "": the first client to Apply, until the node restarts.
	Writer string
	// WatchBufferBytes bounds what one Watch subscriber may have queued
	// on the node (the keys of the batches not yet sent to it); one that
	// falls further behind is sent a resync. Default 1 MiB; 4 KiB to
	// 1 GiB.
	WatchBufferBytes int
}

// Server defaults and bounds.
const (
	streamWorkers           = 16
	DefaultWatchBufferBytes = 1 << 20
	minWatchBufferBytes     = 4 << 10
	maxWatchBufferBytes     = 1 << 30
)

// Server is a running memory node: the tiers in dir, served on a
// listener.
type Server struct {
	svc  *service
	grpc *grpc.Server
	addr string
	done chan error
	once sync.Once // halt's
	err  error     // halt's
}

// Serve opens (or creates) the tiers in dir and serves them on lis until
// Close. The published height starts at the storage tier's savepoint.
func Serve(dir string, lis net.Listener, opts ServerOptions) (*Server, error) {
	if opts.TLS == nil {
		return nil, errors.New("memnode: the server needs a TLS configuration (mutual TLS)")
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.MaxStreams == 0 {
		opts.MaxStreams = 256
	}
	if opts.WatchBufferBytes == 0 {
		opts.WatchBufferBytes = DefaultWatchBufferBytes
	}
	if b := opts.WatchBufferBytes; b < minWatchBufferBytes || b > maxWatchBufferBytes {
		return nil, fmt.Errorf("memnode: WatchBufferBytes %d: want 0 (default 1 MiB) or %d to %d", b, minWatchBufferBytes, maxWatchBufferBytes)
	}
	opts.Limits.EnsureDefaults()
	if err := opts.Limits.Validate(); err != nil {
		return nil, err
	}
	opts.Tiers.NoCache = true
	db, err := tiered.Open(dir, opts.Tiers)
	if err != nil {
		return nil, fmt.Errorf("memnode: %w", err)
	}
	svc, err := newService(db, opts.Writer, opts.WatchBufferBytes)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	svc.limits = newLimiter(opts.Limits)
	s := &Server{svc: svc, addr: lis.Addr().String(), done: make(chan error, 1)}
	// Static flow-control windows, as on every strand server (no
	// bandwidth-estimation pings), the stream's at ClientStreamWindow as
	// on the nodes' servers for callers: what a stalled stream can make
	// the node hold is 1 MiB, MaxStreams of them a connection.
	s.grpc = grpc.NewServer(append(grpctune.ServerOptions(), grpc.StaticStreamWindowSize(grpctune.ClientStreamWindow), grpc.Creds(credentials.NewTLS(opts.TLS)),
		grpc.UnaryInterceptor(svc.limits.unary), grpc.StreamInterceptor(svc.limits.stream),
		grpc.MaxRecvMsgSize(opts.MaxMessageBytes), grpc.MaxSendMsgSize(opts.MaxMessageBytes),
		grpc.MaxConcurrentStreams(opts.MaxStreams),
		// Calls run on long-lived workers (gRPC starts a goroutine only
		// when all are busy), whose stacks have grown already: a read
		// is a few microseconds of work, and a fresh goroutine's stack
		// growth cost about as much (profiled under YCSB-A).
		grpc.NumStreamWorkers(streamWorkers),
		// Clients ping every keepaliveTime (a reader's silent feed);
		// the node pings too, to free a vanished subscriber's backlog.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveTime / 2, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepaliveTime, Timeout: keepaliveTimeout}))...)
	api.RegisterMemoryNodeServer(s.grpc, s.svc)
	go func() { s.done <- s.grpc.Serve(lis) }()
	return s, nil
}

// Addr returns the address the node serves on.
func (s *Server) Addr() string { return s.addr }

// Metrics returns the node's counters.
func (s *Server) Metrics() Metrics { return s.svc.metrics() }

// Kill stops serving at once and drops the memory tier unflushed: what
// SIGKILL leaves, for tests in one process. A Serve on the same directory
// then starts at the storage savepoint.
func (s *Server) Kill() error { return s.halt(true) }

// Close stops serving (running calls end first), then flushes the memory
// tier to storage with sync and closes it, so that a clean restart loses
// nothing. After Kill or Close, both do nothing.
func (s *Server) Close() error { return s.halt(false) }

// closeGrace is how long Close lets running calls finish.
var closeGrace = 10 * time.Second

func (s *Server) halt(kill bool) error {
	s.once.Do(func() {
		closeDB := s.svc.db.Close
		s.svc.feed.close()    // Watch calls never end on their own
		s.svc.streams.close() // nor read streams: their clients half-close them
		if kill {
			s.grpc.Stop()
			closeDB = s.svc.db.CloseLosingMemory
		} else {
			// A call blocked sending to a client that does not read
			// (a Watch) would hold GracefulStop forever: cut it off.
			cut := time.AfterFunc(closeGrace, s.grpc.Stop)
			s.grpc.GracefulStop()
			cut.Stop()
		}
		err := <-s.done
		if errors.Is(err, grpc.ErrServerStopped) {
			err = nil
		}
		if cerr := closeDB(); cerr != nil {
			err = fmt.Errorf("memnode: %w", cerr)
		}
		s.err = err
	})
	return s.err
}
