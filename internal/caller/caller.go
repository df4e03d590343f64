// Package caller names the channel member behind a gRPC call: the holder
// of the mutually authenticated TLS client certificate of its connection.
//
// Every node verifies the certificate's chain during the TLS handshake
// (node.TLSConfigs); Member checks it again against the channel's
// registry, which also yields its org and role, so that a service can
// authorize the caller by role or by policy before it reads or sends
// anything.
package caller

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/policy"
)

// ErrUnknown: the call carries no TLS client certificate that the
// channel's registry accepts.
var ErrUnknown = errors.New("caller: unknown caller")

// ErrNotReader: the caller does not satisfy the channel's read policy.
var ErrNotReader = errors.New("caller: not a reader of the channel")

// Readers is a channel's read policy as CheckRead applies it: an
// explicit Policy, or, when Policy is nil and Members is set, every
// member of the orgs in force at the node's committed height (the
// registry's membership: an added org's identities from the block after
// its update, a removed org's never again). The zero value checks no
// caller: a service without TLS, in a test.
type Readers struct {
	Policy  *policy.Policy
	Members bool
}

// Checks reports whether r checks callers at all.
func (r Readers) Checks() bool { return r.Policy != nil || r.Members }

// String names the policy in refusals.
func (r Readers) String() string {
	if r.Policy != nil {
		return r.Policy.String()
	}
	return "every member org of the channel"
}

// CheckRead checks the caller of a service that reveals the chain (an
// orderer's Deliver, a peer's block events) against the channel's read
// policy, readers: the peers and orderers of the channel's orgs always
// read (they need the chain), any other member must satisfy readers;
// with readers.Members, being a member in force (Member) is enough. The
// error wraps ErrUnknown or ErrNotReader and names the caller and the
// policy.
func CheckRead(ctx context.Context, reg *identity.Registry, readers Readers, channel string) error {
	if !readers.Checks() {
		return nil
	}
	m, _, err := Member(ctx, reg)
	if err != nil {
		return fmt.Errorf("reading channel %q (read policy: %s): %w", channel, readers, err)
	}
	if m.Role == identity.RolePeer || m.Role == identity.RoleOrderer || readers.Policy == nil ||
		readers.Policy.Evaluate([]policy.Signer{{Org: m.Org, Role: m.Role}}) {
		return nil
	}
	return fmt.Errorf("%w: %s/%s (role %s) may not read channel %q: its read policy (readers) is %s",
		ErrNotReader, m.Org, m.Name, m.Role, channel, readers)
}

// Member returns the registry's member for the TLS client certificate of
// ctx's connection and a description of it for messages ("subject" from
// address). The error wraps ErrUnknown and says why.
func Member(ctx context.Context, reg *identity.Registry) (*identity.Member, string, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil, "", fmt.Errorf("%w: no peer information on the call", ErrUnknown)
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.PeerCertificates) == 0 {
		return nil, p.Addr.String(), fmt.Errorf("%w: caller %s presented no TLS client certificate", ErrUnknown, p.Addr)
	}
	leaf := ti.State.PeerCertificates[0]
	who := fmt.Sprintf("%q from %s", leaf.Subject.String(), p.Addr)
	m, err := CertMember(reg, leaf)
	if err == nil {
		err = reg.Revoked(m)
	}
	if err != nil {
		return nil, who, fmt.Errorf("%w: certificate %s: %w", ErrUnknown, who, err)
	}
	return m, who, nil
}

// CertMember returns the registry's member for a TLS certificate, whose
// first O names its org.
func CertMember(reg *identity.Registry, leaf *x509.Certificate) (*identity.Member, error) {
	org := ""
	if len(leaf.Subject.Organization) > 0 {
		org = leaf.Subject.Organization[0]
	}
	return reg.Member(&api.Identity{Org: org, Cert: leaf.Raw})
}
