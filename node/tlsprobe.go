package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
)

// Errors of ProbeTLS: test with errors.Is.
var (
	// ErrNotListening: nothing accepted a TCP connection at the address.
	ErrNotListening = errors.New("node: nothing listening")
	// ErrTLSRefused: the node accepted the TCP connection, so it runs,
	// but refused the TLS handshake: the client's certificate is revoked,
	// of an org removed from the channel, expired, or from a CA the
	// channel does not trust (the node logs which, and counts it:
	// TLSMetrics).
	ErrTLSRefused = errors.New("node: TLS handshake refused by the node")
)

// ProbeTLS says why a node at addr may not answer a client with TLS
// configuration conf (a client's from ClientTLS or ExpectServer): nil if
// it completed a handshake and the node sent its first bytes (a gRPC
// server's HTTP/2 settings), or ctx ended while waiting for them; an
// error wrapping ErrNotListening if no TCP connection opened; one
// wrapping ErrUntrustedPeer if this client refused the node's
// certificate; one wrapping ErrTLSRefused if the node refused the
// handshake. In TLS 1.3 a client's handshake ends before the server has
// checked the client's certificate, so the server's refusal (an alert,
// or the connection closed) is what the first read returns: the probe
// decides by what happens, not by an error's text.
func ProbeTLS(ctx context.Context, addr string, conf *tls.Config) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("%w at %s: %w", ErrNotListening, addr, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	cfg := conf.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	if !slices.Contains(cfg.NextProtos, "h2") {
		cfg.NextProtos = append(cfg.NextProtos, "h2")
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		if errors.Is(err, ErrUntrustedPeer) {
			return err
		}
		return fmt.Errorf("%w: %s: %w", ErrTLSRefused, addr, err)
	}
	if _, err := tc.Read(make([]byte, 1)); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil // no refusal before ctx's deadline
		}
		return fmt.Errorf("%w: %s: %w", ErrTLSRefused, addr, err)
	}
	return nil
}
