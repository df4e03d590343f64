package orderer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
)

// The Cluster service carries Raft messages and forwarded submissions
// between the orderers of a channel. It is defined by hand (no generated
// code): each message is a wrapperspb.BytesValue holding the exact bytes
// (a raftpb.Message, or a transaction), so the standard proto codec
// carries it and nothing is decoded twice.
//
//	Step    (client stream of BytesValue(raftpb.Message)) returns BytesValue{}
//	Forward (BytesValue(transaction))                     returns BytesValue{}; errors as gRPC status
const clusterService = "strand.orderer.Cluster"

var clusterDesc = grpc.ServiceDesc{
	ServiceName: clusterService,
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Forward", Handler: forwardHandler}},
	Streams:     []grpc.StreamDesc{{StreamName: "Step", Handler: stepHandler, ClientStreams: true}},
	Metadata:    "orderer/cluster.go",
}

// Redial bounds gRPC's reconnection backoff on connections between
// nodes (cluster members, peers to orderers) to 2 s. gRPC's default grows
// to 120 s, and a call on a connection waiting to redial fails at once: a
// member or peer whose orderers were down for ten seconds would wait up
// to about six more before it tried again, however soon they were back.
var Redial = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
	MinConnectTimeout: 5 * time.Second,
})

// maxRaftMsg bounds one received Raft message: an append carries whole
// batches, and one batch may be as large as a block (a snapshot is
// smaller: it names blocks, which catch-up fetches one by one).
const maxRaftMsg = api.MaxBlockMessage

// IsClusterMethod reports whether fullMethod ("/service/method") is a
// method of the Cluster service, which only the channel's orderers may
// call.
func IsClusterMethod(fullMethod string) bool {
	return strings.HasPrefix(fullMethod, "/"+clusterService+"/")
}

// RegisterCluster registers o's Cluster service on s, the gRPC server
// that serves the connections of the channel's orderers (node routes them
// by their TLS certificates).
// It is a no-op for an orderer without RaftConfig.
func RegisterCluster(s grpc.ServiceRegistrar, o *Orderer) {
	if o.raft == nil {
		return
	}
	s.RegisterService(&clusterDesc, o.raft.tr)
}

func forwardHandler(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.BytesValue)
	if err := dec(in); err != nil {
		return nil, err
	}
	h := func(ctx context.Context, req any) (any, error) {
		in := req.(*wrapperspb.BytesValue)
		t, err := srv.(clusterRouter).forwardTo(in.GetValue())
		if err != nil {
			return nil, err
		}
		return t.forwarded(ctx, in)
	}
	if icpt == nil {
		return h(ctx, in)
	}
	return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + clusterService + "/Forward"}, h)
}

func stepHandler(srv any, stream grpc.ServerStream) error {
	t, err := srv.(clusterRouter).stepTo(stream.Context())
	if err != nil {
		return err
	}
	return t.step(stream)
}

// member authenticates the caller of an RPC: its TLS client certificate
// must be a valid orderer-role certificate of the channel (Registry) and
// name a configured member. It returns that member's Raft id.
func (t *transport) member(ctx context.Context) (uint64, error) {
	m, who, err := caller.Member(ctx, t.o.cfg.Registry)
	if err != nil {
		return 0, err
	}
	if m.Role != identity.RoleOrderer {
		return 0, fmt.Errorf("certificate %s has role %s, want orderer", who, m.Role)
	}
	id, ok := t.memberID(m.Org, m.Name)
	if !ok {
		if raw := t.removedBy(m.Org, m.Name); raw != nil {
			return 0, &removedError{msg: fmt.Sprintf("orderer %s/%s (%s) was removed from this channel's Raft cluster by a config update", m.Org, m.Name, who), update: raw}
		}
		return 0, fmt.Errorf("orderer %s/%s (%s) is not a member of this channel's Raft cluster", m.Org, m.Name, who)
	}
	return id, nil
}

// refuse counts a refused caller or message, logs it within the log
// budget of its kind (a flood cannot fill the disk), and returns the gRPC
// error the caller gets. The error names the sender (certificate and
// address, or member id) and the reason.
func (t *transport) refuse(what string, kind refusal, err error) error {
	t.o.m.refused(kind)
	t.o.raft.refusals.warn(t.o.cfg.Log, kind.String(), "raft: refused "+what, "channel", t.o.cfg.Channel, "raft_id", t.self,
		"kind", kind.String(), "reason", err)
	st := status.Newf(codes.PermissionDenied, "orderer: %s refused: %v", what, err)
	var re *removedError
	if errors.As(err, &re) { // the evidence, for the removed member (see removedError)
		if d, derr := st.WithDetails(wrapperspb.Bytes(re.update)); derr == nil {
			st = d
		}
	}
	return st.Err()
}

// removedError refuses a member that a config update removed. The
// refusal carries that update's envelope: the removed member may not have
// learnt the commit of its own removal (the leader stops replicating to
// it once the removal applies), so it verifies the update against its own
// config state (checkConfigUpdate, the admins' signatures) and stops
// (raftNode.removedHint).
type removedError struct {
	msg    string
	update []byte
}

func (e *removedError) Error() string { return e.msg }

// removedUpdate returns the config update a refusal carries, nil if none.
func removedUpdate(err error) []byte {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.PermissionDenied {
		return nil
	}
	for _, d := range st.Details() {
		if b, ok := d.(*wrapperspb.BytesValue); ok && api.IsConfigEnvelope(b.GetValue()) {
			return b.GetValue()
		}
	}
	return nil
}

// removedBy returns the config update that removed member org/name, nil
// if none did.
func (t *transport) removedBy(org, name string) []byte {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.mu.removed[org+"/"+name]
}

// noteRemoved records the config update that removed p.
func (t *transport) noteRemoved(p RaftPeer, update []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.removed[p.Org+"/"+p.Name] = update
}

// step receives one member's stream of Raft messages. Every message must
// come from the authenticated member (From) and be addressed to this node
// (To). A message of an older term than this node's is counted and
// logged but still stepped: with CheckQuorum and PreVote, raft answers a
// stale leader's heartbeat or append, and a stale pre-vote, with its own
// term, and that answer is the only way a leader still holding its old
// term's majority learns of a member that moved on (a member that dropped
// them stayed cut off from that leader for as long as it kept its
// majority: TestCatchUpRefusesBadBlocks saw orderer 2 stuck at term 4
// under a term-3 leader). Raft ignores the rest.
func (t *transport) step(stream grpc.ServerStream) error {
	from, err := t.member(stream.Context())
	if err != nil {
		return t.refuse("raft stream", refuseNotMember, err)
	}
	defer t.report(report{to: from, lost: true})
	in := &wrapperspb.BytesValue{}
	for {
		if err := stream.RecvMsg(in); err != nil {
			if errors.Is(err, io.EOF) {
				return stream.SendMsg(&wrapperspb.BytesValue{})
			}
			return err
		}
		if _, ok := t.link(from); !ok { // a config update removed it since the stream began
			if _, err := t.member(stream.Context()); err != nil {
				return t.refuse("raft stream", refuseNotMember, err)
			}
		}
		m := &pb.Message{}
		if err := proto.Unmarshal(in.Value, m); err != nil {
			return t.refuse("raft message", refuseMalformed, fmt.Errorf("from orderer %d: %d bytes do not decode: %w", from, len(in.Value), err))
		}
		if !t.sentBy(m, from) || m.GetTo() != t.self {
			return t.refuse("raft message", refuseWrongSender, fmt.Errorf("%s from %d to %d arrived from orderer %d at orderer %d",
				m.GetType(), m.GetFrom(), m.GetTo(), from, t.self))
		}
		if cur := t.o.raft.term.Load(); m.GetTerm() != 0 && m.GetTerm() < cur {
			t.o.m.raftStale.Add(1)
			// Normal for a moment after a leader change (the old
			// leader's messages in flight), so info, within a budget.
			t.o.raft.refusals.log(t.o.cfg.Log, slog.LevelInfo, "stale_term", "raft: a stale-term message (raft answers it with this term)", "channel", t.o.cfg.Channel,
				"raft_id", t.self, "from", from, "type", m.GetType().String(), "reason", fmt.Sprintf("term %d is older than this orderer's term %d", m.GetTerm(), cur))
		}
		select {
		case t.recv <- m:
		case <-t.stop:
			return status.Error(codes.Unavailable, "orderer: closing")
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
	}
}

// sentBy reports whether m may arrive from authenticated member from:
// its From must be from, except for MsgTransferLeader, whose From is the
// transferee, which a follower passes on to the leader as raft does
// (TransferLeader asked at a follower); the transferee must still be a
// member.
func (t *transport) sentBy(m *pb.Message, from uint64) bool {
	if m.GetType() == pb.MessageType_MsgTransferLeader {
		if m.GetFrom() == t.self {
			return true
		}
		_, ok := t.link(m.GetFrom())
		return ok
	}
	return m.GetFrom() == from
}
