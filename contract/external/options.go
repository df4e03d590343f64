package external

import (
	"crypto/tls"
	"fmt"
	"time"
)

// Options configures a Runtime. The zero value is usable except for
// Client: EnsureDefaults fills in the rest.
type Options struct {
	// Client is the peer's client side of mutual TLS: its Certificates
	// (or GetClientCertificate) are shown to contract servers. Its root
	// CAs are not used: a server is verified against its package's
	// RootCert. Nil dials without a client certificate, which a server
	// that requires one (every strand server) refuses.
	Client *tls.Config
	// Org is the peer's org: a package's OrgAddresses[Org], if set, is
	// the address this runtime dials instead of its Address.
	Org string
	// Timeout bounds one call, from its start to its result. Default 2s,
	// shorter than the endorser's 5 s, so that the runtime, not the
	// endorser, ends a call a server never answers.
	Timeout time.Duration
	// MaxMessageBytes bounds one protocol message either way (a value, a
	// range page). Default 16 MiB, at least 5 MiB (a 4 MiB value and its
	// key).
	MaxMessageBytes int
	// MaxQueuedBytes bounds what one call's unanswered requests (puts,
	// deletes, events) may hold on the peer before it processes them;
	// past it the call fails with ErrProtocol. Default 64 MiB.
	MaxQueuedBytes int
}

// Defaults.
const (
	DefaultTimeout         = 2 * time.Second
	DefaultMaxMessageBytes = 16 << 20
	DefaultMaxQueuedBytes  = 64 << 20
)

// EnsureDefaults fills in zero fields.
func (o *Options) EnsureDefaults() {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.MaxQueuedBytes == 0 {
		o.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
}

// Validate reports the first invalid field.
func (o *Options) Validate() error {
	switch {
	case o.Timeout <= 0:
		return fmt.Errorf("%w: Timeout is %v, want more than 0", ErrBadOptions, o.Timeout)
	case o.MaxMessageBytes < 5<<20:
		return fmt.Errorf("%w: MaxMessageBytes is %d, want at least %d", ErrBadOptions, o.MaxMessageBytes, 5<<20)
	case o.MaxQueuedBytes < o.MaxMessageBytes:
		return fmt.Errorf("%w: MaxQueuedBytes is %d, want at least MaxMessageBytes (%d)", ErrBadOptions, o.MaxQueuedBytes, o.MaxMessageBytes)
	}
	return nil
}
