package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
)

// A node serves each kind of caller from its own gRPC server, because
// gRPC's receive limit (grpc.MaxRecvMsgSize) belongs to a server, not to a
// method, and gRPC refuses a message over it on its 5-byte length prefix,
// before it allocates anything for the message. One limit for everyone
// would have to admit the largest message any caller sends (a Raft append
// of a whole block, api.MaxBlockMessage, 268 MiB), and then any client
// could make the node receive 268 MiB per call before a handler refused
// it: four concurrent 200 MB Submit calls grew an orderer by 2.4 GiB.
//
// So one TCP listener does the TLS handshake itself and hands each
// connection to the server for the role of its client certificate
// (roleListener): an orderer of the channel gets the cluster server, with
// the limits of blocks and Raft messages; everyone else gets the client
// server, whose limit is one request (api.MaxRequestMessage). The role is
// known when the handshake ends, before the connection's first HTTP/2
// frame is read, so a client never reaches a server with a larger limit.

// handshakeTimeout bounds a TLS handshake: a caller that connects and
// stalls holds a goroutine and a socket for at most this long.
const handshakeTimeout = 10 * time.Second

// roleListener accepts TCP connections, does their TLS handshakes
// concurrently, and queues each handshaken connection on the listener of
// the server its client certificate's role picks (route returns an index
// into outs). The child listeners' Accept returns the *tls.Conn; their
// gRPC servers use handshaken credentials.
type roleListener struct {
	lis   net.Listener
	tls   *tls.Config
	route func(leaf *x509.Certificate) int
	outs  []*childListener
	log   *slog.Logger

	refusals tlsRefusals // failed handshakes, by reason

	closeOnce sync.Once
	closed    chan struct{} // closed when lis is closed
}

// newRoleListener serves n servers from lis. The TLS configuration must
// require and verify a client certificate (TLSConfigs' server side does):
// route is only ever called with a verified leaf.
func newRoleListener(lis net.Listener, serverTLS *tls.Config, n int, route func(*x509.Certificate) int, log *slog.Logger) *roleListener {
	cfg := serverTLS.Clone()
	// gRPC clients insist on HTTP/2 by ALPN; credentials.NewTLS adds it,
	// and this listener stands in for credentials.NewTLS.
	if !slices.Contains(cfg.NextProtos, "h2") {
		cfg.NextProtos = append(cfg.NextProtos, "h2")
	}
	r := &roleListener{lis: lis, tls: cfg, route: route, log: log, closed: make(chan struct{})}
	for range n {
		r.outs = append(r.outs, &childListener{parent: r, conns: make(chan net.Conn), done: make(chan struct{})})
	}
	go r.accept()
	return r
}

// Addr is where the listener listens.
func (r *roleListener) Addr() net.Addr { return r.lis.Addr() }

// Close stops accepting; the child listeners' Accept then fails.
func (r *roleListener) Close() error {
	var err error
	r.closeOnce.Do(func() {
		err = r.lis.Close()
		close(r.closed)
	})
	return err
}

// accept accepts connections until the listener is closed. Other errors
// (out of file descriptors) pass: it waits, up to a second, and accepts
// again, as gRPC's own server does, so that a flood of connections
// cannot stop the node from serving for good.
func (r *roleListener) accept() {
	var wait time.Duration
	for {
		c, err := r.lis.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				r.Close()
				return
			}
			wait = min(max(2*wait, 5*time.Millisecond), time.Second)
			r.log.Warn("accepting a connection failed; retrying", "listen", r.lis.Addr().String(), "wait", wait, "err", err)
			select {
			case <-time.After(wait):
			case <-r.closed:
				return
			}
			continue
		}
		wait = 0
		go r.handshake(c)
	}
}

// handshake completes c's TLS handshake within handshakeTimeout and hands
// it to the server its certificate's role picks. A failed handshake has
// already told the caller why (TLSConfigs' VerifyConnection sends the
// alert; the refusal names the certificate), and is counted and logged
// here too (tlsRefusals).
func (r *roleListener) handshake(c net.Conn) {
	tc := tls.Server(c, r.tls)
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.Handshake(); err != nil {
		r.refusals.note(r.log, c.RemoteAddr().String(), err, time.Now())
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	out := r.outs[r.route(tc.ConnectionState().PeerCertificates[0])]
	select {
	case out.conns <- tc:
	case <-out.done:
		tc.Close()
	case <-r.closed:
		tc.Close()
	}
}

// childListener is what one gRPC server accepts from: the connections
// roleListener routed to it.
type childListener struct {
	parent    *roleListener
	conns     chan net.Conn
	closeOnce sync.Once
	done      chan struct{}
}

func (l *childListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
	case <-l.parent.closed:
	}
	return nil, net.ErrClosed
}

// Close stops this child only; the node closes the roleListener itself.
func (l *childListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

func (l *childListener) Addr() net.Addr { return l.parent.Addr() }

// handshaken are the transport credentials of a gRPC server whose listener
// (roleListener) has done the TLS handshake: they report the connection's
// TLS state as credentials.NewTLS would, so handlers see the caller's
// certificate through peer.FromContext as usual.
type handshaken struct{}

func (handshaken) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return nil, nil, fmt.Errorf("node: connection from %s is a %T, want a *tls.Conn from the node's listener", c.RemoteAddr(), c)
	}
	return c, credentials.TLSInfo{State: tc.ConnectionState(), CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}, nil
}

func (handshaken) ClientHandshake(_ context.Context, _ string, c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("node: handshaken credentials serve only; dial with credentials.NewTLS")
}

func (handshaken) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls", SecurityVersion: "1.3"}
}

func (h handshaken) Clone() credentials.TransportCredentials { return h }

func (handshaken) OverrideServerName(string) error { return nil }
