package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
)

// Refusals of ChannelAdmin, beside ErrConfig (a genesis document that
// does not parse, is not canonical, or leaves the node out).
var (
	errChannelServed = errors.New("node: channel already served")
	errNotServed     = errors.New("node: unknown channel")
	errJoinRefused   = errors.New("node: join refused")
	errLeaveRefused  = errors.New("node: leave refused")
)

// channelNode is a node whose channels ChannelAdmin changes: a peer or
// an orderer. Joins and leaves are serialized by the node.
type channelNode interface {
	joinChannel(ch *ChannelConfig) (*api.ChannelInfo, error)
	leaveChannel(ctx context.Context, id string) (*api.ChannelInfo, error)
	listChannels() []*api.ChannelInfo
}

// channelAdmin serves ChannelAdmin for a node of org. Its caller's
// mutual-TLS client certificate must be an admin's of the node's own org,
// as a channel the node serves knows that org (regs): an org's admin
// decides which channels its nodes serve, as in Fabric's channel
// participation API, and nobody else.
type channelAdmin struct {
	api.UnimplementedChannelAdminServer
	org  string
	regs func() []*identity.Registry
	node channelNode
	log  *slog.Logger
}

func (a *channelAdmin) Join(ctx context.Context, req *api.ChannelJoinRequest) (*api.ChannelInfo, error) {
	who, err := a.admin(ctx, "Join")
	if err != nil {
		return nil, err
	}
	ch, err := ChannelFromGenesis(req.GetGenesis(), "the join request's genesis document")
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	a.log.Info("channel join requested", "channel", ch.Channel, "hash", ch.Hash(), "by", who)
	info, err := a.node.joinChannel(ch)
	if err != nil {
		a.log.Warn("channel join failed", "channel", ch.Channel, "err", err)
		return nil, statusOf(err)
	}
	return info, nil
}

func (a *channelAdmin) Leave(ctx context.Context, req *api.ChannelLeaveRequest) (*api.ChannelInfo, error) {
	who, err := a.admin(ctx, "Leave")
	if err != nil {
		return nil, err
	}
	a.log.Info("channel leave requested", "channel", req.GetChannel(), "by", who)
	info, err := a.node.leaveChannel(ctx, req.GetChannel())
	if err != nil {
		return nil, statusOf(err)
	}
	return info, nil
}

func (a *channelAdmin) List(ctx context.Context, _ *api.ChannelListRequest) (*api.ChannelListResponse, error) {
	if _, err := a.admin(ctx, "List"); err != nil {
		return nil, err
	}
	return &api.ChannelListResponse{Channels: a.node.listChannels()}, nil
}

// admin returns who the caller is if it is an admin of the node's org,
// else a PermissionDenied status that says why not.
func (a *channelAdmin) admin(ctx context.Context, call string) (string, error) {
	var why []string
	for _, reg := range a.regs() {
		m, who, err := caller.Member(ctx, reg)
		switch {
		case err != nil:
			why = append(why, err.Error())
		case m.Org != a.org || m.Role != identity.RoleAdmin:
			why = append(why, fmt.Sprintf("certificate %s is of %s/%s with role %s", who, m.Org, m.Name, m.Role))
		default:
			return m.Org + "/" + m.Name, nil
		}
	}
	if len(why) == 0 {
		why = append(why, "no channel knows the caller")
	}
	return "", status.Errorf(codes.PermissionDenied, "node: ChannelAdmin.%s refused: it takes an admin TLS certificate of org %s, the node's org (%s)",
		call, a.org, strings.Join(dedupe(why), "; "))
}

func dedupe(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// statusOf is a join or leave error as a gRPC status.
func statusOf(err error) error {
	code := codes.Internal
	switch {
	case errors.Is(err, errChannelServed):
		code = codes.AlreadyExists
	case errors.Is(err, errNotServed):
		code = codes.NotFound
	case errors.Is(err, errJoinRefused), errors.Is(err, errLeaveRefused), errors.Is(err, ErrConfig):
		code = codes.FailedPrecondition
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	return status.Error(code, err.Error())
}
