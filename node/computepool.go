package node

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
	"github.com/strand-ledger/strand/internal/grpctune"
	"github.com/strand-ledger/strand/mux"
	"github.com/strand-ledger/strand/orderer"
)

// poolServer is a primary's ComputePool service: it admits compute nodes
// to its gateway's pool for as long as their Join stream lives.
//
// Invariant: a member is in the pool exactly while its Join handler runs,
// and the handler returns as soon as the stream's context ends, which
// gRPC does the moment the connection breaks (a SIGKILLed process's
// socket is closed by the kernel). A proposal in flight on it then fails
// at the transport and the pool asks another member.
type poolServer struct {
	api.UnimplementedComputePoolServer
	pool    *gateway.Pool
	reg     *identity.Registry
	org     string
	primary string
	// clientTLS dials compute nodes (a peer's client side of mutual TLS).
	clientTLS *tls.Config
	height    func() uint64
	log       *slog.Logger
	// channel is the channel whose pool this is; verify, when not nil,
	// lets the committer ask a member to check signatures for stage 1
	// (compute.verify: compute) until the returned function is called.
	channel string
	verify  func(name string, r committer.Remote) (remove func())
}

// Join admits the calling compute node: its mutual-TLS certificate must
// be a peer's of the primary's org whose common name is the name it
// joins under, and it must serve that same certificate at its address.
func (s *poolServer) Join(req *api.JoinRequest, stream api.ComputePool_JoinServer) error {
	ctx := stream.Context()
	m, who, err := caller.Member(ctx, s.reg)
	if err != nil {
		return status.Errorf(codes.PermissionDenied, "node: joining the pool of %s: %v", s.primary, err)
	}
	if err := admitJoin(req, m, who, s.org, s.primary); err != nil {
		return err
	}
	creds := credentials.NewTLS(expectName(ExpectServer(s.clientTLS, identity.RolePeer), m.Name))
	cc, err := grpc.NewClient(req.GetAddress(), append(grpctune.DialOptions(), grpc.WithTransportCredentials(creds), orderer.Redial)...)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "node: compute node %s at %s: %v", m.Name, req.GetAddress(), err)
	}
	conn := mux.NewConn(cc)
	defer conn.Close()
	remove, err := s.pool.Add(m.Name, gateway.BatchProposals(gateway.NamedEndorser(m.Name, api.NewEndorserClient(conn))))
	if err != nil {
		return status.Errorf(codes.AlreadyExists, "%v", err)
	}
	defer remove()
	if s.verify != nil {
		rv := &remoteVerifier{client: api.NewVerifierClient(conn), channel: s.channel}
		stop := s.verify(m.Name, rv)
		rv.mu.Lock()
		rv.drop = stop
		rv.mu.Unlock()
		defer stop()
	}
	members := s.pool.Members()
	s.log.Info("compute node joined the pool", "compute", m.Name, "address", req.GetAddress(), "members", members)
	if err := stream.Send(&api.JoinEvent{Members: uint32(len(members)), Height: s.height()}); err != nil {
		return err
	}
	<-ctx.Done()
	s.log.Info("compute node left the pool", "compute", m.Name, "why", ctx.Err())
	return nil
}

// admitJoin checks a Join request of member m (described by who) against
// the primary's org: a peer of that org, joining under its certificate's
// name, at a host:port. The error is a gRPC status naming what is wrong.
func admitJoin(req *api.JoinRequest, m *identity.Member, who, org, primary string) error {
	if m.Org != org || m.Role != identity.RolePeer {
		return status.Errorf(codes.PermissionDenied, "node: %s is %s of org %s; only a peer of org %s (the primary %s's org) may join its pool",
			who, m.Role, m.Org, org, primary)
	}
	if req.GetName() != m.Name {
		return status.Errorf(codes.InvalidArgument, "node: a compute node joins as %q but its certificate names %q; want the same name", req.GetName(), m.Name)
	}
	if why := checkHostPort(req.GetAddress()); why != "" {
		return status.Errorf(codes.InvalidArgument, "node: compute node %s joins with address %q; want %s", m.Name, req.GetAddress(), why)
	}
	return nil
}

// expectName returns a copy of a client configuration that also requires
// the server's certificate to name name (its CN): the compute node the
// primary dials is the one that joined, and the primary a compute node
// joins is the peer its file names.
func expectName(c *tls.Config, name string) *tls.Config {
	out := c.Clone()
	verify := c.VerifyConnection
	out.VerifyConnection = func(cs tls.ConnectionState) error {
		if verify != nil {
			if err := verify(cs); err != nil {
				return err
			}
		}
		if got := cs.PeerCertificates[0].Subject.CommonName; got != name {
			return fmt.Errorf("%w: server certificate names %q, want %q", ErrUntrustedPeer, got, name)
		}
		return nil
	}
	return out
}
