package orderer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
)

// The Admin service is the orderer's operator interface, defined by hand
// like the Cluster service (no generated code):
//
//	TransferLeader (UInt64Value: the Raft id to hand leadership to)
//	            returns UInt64Value: the leader once the transfer is done
//	Config      (Empty) returns BytesValue: the JSON of a ConfigInfo, the
//	            channel config this member has applied (what the next
//	            config update must start from)
//
// Its caller must present, as its mutual-TLS client certificate, an
// admin-role certificate of an org that runs an orderer of this Raft
// cluster (an orderer org's admin): the certificate is the credential,
// as for the Cluster service.
const adminService = "strand.orderer.Admin"

var adminDesc = grpc.ServiceDesc{
	ServiceName: adminService,
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "TransferLeader", Handler: transferLeaderHandler},
		{MethodName: "Config", Handler: configHandler},
	},
	Metadata: "orderer/admin.go",
}

var (
	// ErrNotRaft: an operation that needs a Raft cluster member was asked
	// of a single-node orderer.
	ErrNotRaft = errors.New("orderer: not a Raft cluster member")
	// ErrNoMember: a Raft id that is no member of the cluster.
	ErrNoMember = errors.New("orderer: no such cluster member")
)

// RegisterAdmin registers o's Admin service on s (the gRPC server of its
// Orderer service, with mutual TLS). It is a no-op for an orderer
// without RaftConfig: the service has nothing to offer it yet.
func RegisterAdmin(s grpc.ServiceRegistrar, o *Orderer) {
	if o.raft == nil {
		return
	}
	s.RegisterService(&adminDesc, o)
}

func transferLeaderHandler(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.UInt64Value)
	if err := dec(in); err != nil {
		return nil, err
	}
	h := func(ctx context.Context, req any) (any, error) {
		o, err := srv.(adminRouter).adminTo(ctx)
		if err != nil {
			return nil, err
		}
		return o.transferLeaderRPC(ctx, req.(*wrapperspb.UInt64Value))
	}
	if icpt == nil {
		return h(ctx, in)
	}
	return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + adminService + "/TransferLeader"}, h)
}

func (o *Orderer) transferLeaderRPC(ctx context.Context, in *wrapperspb.UInt64Value) (*wrapperspb.UInt64Value, error) {
	who, err := o.admin(ctx)
	if err != nil {
		o.raft.refusals.warn(o.cfg.Log, "admin", "orderer: refused an admin call", "channel", o.cfg.Channel, "call", "TransferLeader", "reason", err)
		return nil, status.Errorf(codes.PermissionDenied, "orderer: TransferLeader refused: %v", err)
	}
	o.cfg.Log.Info("raft: leader transfer requested", "channel", o.cfg.Channel, "raft_id", o.raft.cfg.ID, "to", in.GetValue(), "by", who)
	if err := o.TransferLeader(ctx, in.GetValue()); err != nil {
		code := codes.Unavailable
		switch {
		case errors.Is(err, ErrNoMember):
			code = codes.InvalidArgument
		case errors.Is(err, context.DeadlineExceeded):
			code = codes.DeadlineExceeded
		}
		return nil, status.Error(code, err.Error())
	}
	return wrapperspb.UInt64(o.raft.leader.Load()), nil
}

func configHandler(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
	in := new(emptypb.Empty)
	if err := dec(in); err != nil {
		return nil, err
	}
	h := func(ctx context.Context, _ any) (any, error) {
		o, err := srv.(adminRouter).adminTo(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := o.admin(ctx); err != nil {
			return nil, status.Errorf(codes.PermissionDenied, "orderer: Config refused: %v", err)
		}
		raw, err := json.Marshal(o.ConfigInfo())
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return wrapperspb.Bytes(raw), nil
	}
	if icpt == nil {
		return h(ctx, in)
	}
	return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + adminService + "/Config"}, h)
}

// ConfigInfo is the channel config a Raft member has applied: the
// number of config updates (the next update's Sequence), the largest
// Raft id used so far (a new orderer needs a larger one) and the orderer
// set.
type ConfigInfo struct {
	Channel  string              `json:"channel"`
	Sequence uint64              `json:"sequence"`
	MaxID    uint64              `json:"maxId"`
	Orderers []api.ConfigOrderer `json:"orderers"`
}

// ConfigInfo returns the config this member has applied (zero for a
// single-node orderer).
func (o *Orderer) ConfigInfo() ConfigInfo {
	if o.raft == nil {
		return ConfigInfo{Channel: o.cfg.Channel}
	}
	st := o.raft.confView.Load()
	info := ConfigInfo{Channel: o.cfg.Channel, Sequence: st.Seq, MaxID: st.MaxID}
	for _, p := range st.Peers {
		info.Orderers = append(info.Orderers, api.ConfigOrderer{ID: p.ID, Org: p.Org, Name: p.Name, Address: p.Address})
	}
	return info
}

// ConfigClient calls Config on the orderer at the other end of cc (as an
// orderer org's admin).
func ConfigClient(ctx context.Context, cc grpc.ClientConnInterface) (ConfigInfo, error) {
	out := new(wrapperspb.BytesValue)
	if err := cc.Invoke(ctx, "/"+adminService+"/Config", new(emptypb.Empty), out, plainCall); err != nil {
		return ConfigInfo{}, err
	}
	var info ConfigInfo
	if err := json.Unmarshal(out.GetValue(), &info); err != nil {
		return ConfigInfo{}, fmt.Errorf("orderer: Config answer: %w", err)
	}
	return info, nil
}

// admin authenticates the caller of an Admin RPC: its TLS client
// certificate must be a valid admin-role certificate of the channel
// (Registry) of an org that runs an orderer of this cluster. It returns
// "org/name" of the admin.
func (o *Orderer) admin(ctx context.Context) (string, error) {
	m, who, err := caller.Member(ctx, o.cfg.Registry)
	if err != nil {
		return "", err
	}
	if m.Role != identity.RoleAdmin {
		return "", fmt.Errorf("certificate %s has role %s, want admin of an orderer org", who, m.Role)
	}
	for _, rp := range o.raft.confView.Load().Peers {
		if rp.Org == m.Org {
			return m.Org + "/" + m.Name, nil
		}
	}
	return "", fmt.Errorf("admin %s/%s (%s) is not an admin of an orderer org of this cluster", m.Org, m.Name, who)
}

// TransferLeader asks the cluster to hand leadership to member to and
// waits until this member sees to as the leader, or ctx ends (default:
// four election timeouts). It works from any member: a follower passes
// the request to the leader. While a transfer is under way the leader
// holds the batches it cuts and proposes them once the new leader is
// known, so no admitted transaction is lost to a transfer.
func (o *Orderer) TransferLeader(ctx context.Context, to uint64) error {
	r := o.raft
	if r == nil {
		return ErrNotRaft
	}
	if _, ok := r.confView.Load().peer(to); !ok {
		return fmt.Errorf("%w: transfer leader to %d: members are %s", ErrNoMember, to, r.memberList())
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 4*time.Duration(r.cfg.ElectionTicks)*r.cfg.TickInterval)
		defer cancel()
	}
	req := transferReq{to: to, done: make(chan error, 1)}
	select {
	case r.transfers <- req:
	case <-r.done:
		return fmt.Errorf("%w: transfer leader: the Raft loop has stopped", ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("orderer: transfer leader to %d: %w", to, ctx.Err())
	}
	select {
	case err := <-req.done:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return fmt.Errorf("orderer: transfer leader to %d: %w", to, ctx.Err())
	}
	tick := time.NewTicker(r.cfg.TickInterval / 4)
	defer tick.Stop()
	for r.leader.Load() != to {
		select {
		case <-tick.C:
		case <-r.done:
			return fmt.Errorf("%w: transfer leader: the Raft loop has stopped", ErrClosed)
		case <-ctx.Done():
			return fmt.Errorf("%w: leadership did not move to %d (the leader is %d): %w", ErrUnavailable, to, r.leader.Load(), ctx.Err())
		}
	}
	return nil
}

// transferReq asks the Raft loop to start a leader transfer; done gets
// nil once raft has the request (the transfer itself takes an election).
type transferReq struct {
	to   uint64
	done chan error
}

// TransferLeaderClient calls TransferLeader on the orderer at the other
// end of cc (whose TLS client certificate must be an orderer org's
// admin's) and returns the leader it reports.
func TransferLeaderClient(ctx context.Context, cc grpc.ClientConnInterface, to uint64) (uint64, error) {
	out := new(wrapperspb.UInt64Value)
	if err := cc.Invoke(ctx, "/"+adminService+"/TransferLeader", wrapperspb.UInt64(to), out, plainCall); err != nil {
		return 0, err
	}
	return out.GetValue(), nil
}

// plainCall makes an Admin call a plain gRPC call even over a mux.Conn,
// whose stream carries no metadata: the call's ChannelHeader (OnChannel)
// must reach the orderer.
var plainCall = grpc.WaitForReady(false)
