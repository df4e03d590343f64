package orderer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
	"github.com/strand-ledger/strand/mux"
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
	Metadata:    "orderer/transport.go",
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

// transport is one member's end of the Cluster service: the server side
// authenticates and hands messages to the Raft loop; the client side
// keeps one sender goroutine and one stream per other member.
type transport struct {
	o         *Orderer
	self      uint64
	clientTLS *tls.Config
	conns     *ClusterConns    // nil: the links' own connections
	recv      chan *pb.Message // to the Raft loop
	reports   chan report      // unreachable peers, snapshot outcomes → Raft loop
	stop      chan struct{}
	wg        sync.WaitGroup

	// mu guards the member set, which config updates change (setPeers,
	// from the Raft loop); everyone else reads it.
	mu struct {
		sync.RWMutex
		started bool
		peers   map[uint64]*link
		// members maps "org/name" of a TLS certificate to the Raft id.
		members map[string]uint64
		// removed maps "org/name" of a removed member to the config
		// update that removed it (see removedError).
		removed map[string][]byte
	}
}

// report is a delivery outcome the Raft loop must tell raft.
type report struct {
	to       uint64
	snapshot bool // a MsgSnap: ok says whether it was sent
	ok       bool
	// removedBy: member to refused this member as removed, with this
	// config update as evidence (removedError).
	removedBy []byte
	// lost: the stream from member to ended (its process died or
	// closed, or the connection broke): nothing for raft, but a quiesced
	// member wakes, so that the loss of a quiesced leader is noticed.
	lost bool
}

// link is the connection to one other member.
type link struct {
	p    RaftPeer
	conn *mux.Conn // Step streams go over gRPC; Forward calls over the mux stream
	// release hands conn back (ClusterConns, shared with the process's
	// other channels) or closes it (the link's own).
	release func()
	out     chan *pb.Message
	gone    chan struct{} // closed when the member leaves the cluster
	// up is whether the last message to the member went out on an open
	// stream (false until one has): what quorum reports as reachable.
	up atomic.Bool
}

func newTransport(o *Orderer, rc *RaftConfig) (*transport, error) {
	t := &transport{
		o: o, self: rc.ID, clientTLS: rc.ClientTLS, conns: rc.Conns,
		recv: make(chan *pb.Message, 4096), reports: make(chan report, 256), stop: make(chan struct{}),
	}
	t.mu.peers, t.mu.members, t.mu.removed = map[uint64]*link{}, map[string]uint64{}, map[string][]byte{}
	if err := t.setPeers(rc.Peers); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// setPeers makes peers the member set: it dials members that joined and
// drops the links of those that left (their queued messages are lost,
// which Raft tolerates). A link's sender starts with start, or at once
// once the transport has started.
func (t *transport) setPeers(peers []RaftPeer) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	want := map[uint64]RaftPeer{}
	members := map[string]uint64{}
	for _, p := range peers {
		want[p.ID] = p
		members[p.Org+"/"+p.Name] = p.ID
	}
	for id, l := range t.mu.peers {
		if p, ok := want[id]; !ok || p != l.p {
			close(l.gone)
			l.release()
			delete(t.mu.peers, id)
		}
	}
	for _, p := range peers {
		if _, ok := t.mu.peers[p.ID]; ok || p.ID == t.self {
			continue
		}
		conn, release, err := t.dial(p.Address)
		if err != nil {
			return fmt.Errorf("%w: orderer %d (%s/%s) at %q: %w", ErrBadConfig, p.ID, p.Org, p.Name, p.Address, err)
		}
		l := &link{p: p, conn: conn, release: release, out: make(chan *pb.Message, 4096), gone: make(chan struct{})}
		t.mu.peers[p.ID] = l
		if t.mu.started {
			t.wg.Add(1)
			go t.sender(l)
		}
	}
	t.mu.members = members
	return nil
}

// dial returns a connection to addr: the process's shared one
// (ClusterConns) or one of the link's own.
func (t *transport) dial(addr string) (*mux.Conn, func(), error) {
	if t.conns != nil {
		return t.conns.get(addr)
	}
	cc, err := dialOrderer(addr, t.clientTLS)
	if err != nil {
		return nil, nil, err
	}
	conn := mux.NewConn(cc)
	return conn, func() { conn.Close() }, nil
}

// links returns the links to the other members now.
func (t *transport) links() []*link {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*link, 0, len(t.mu.peers))
	for _, l := range t.mu.peers {
		out = append(out, l)
	}
	return out
}

// link returns the link to member id.
func (t *transport) link(id uint64) (*link, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	l, ok := t.mu.peers[id]
	return l, ok
}

// memberID returns the Raft id of the member orderer org/name.
func (t *transport) memberID(org, name string) (uint64, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	id, ok := t.mu.members[org+"/"+name]
	return id, ok
}

func (t *transport) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.started = true
	for _, l := range t.mu.peers {
		t.wg.Add(1)
		go t.sender(l)
	}
}

// close stops the senders and closes the connections.
func (t *transport) close() {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	t.wg.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.mu.peers {
		l.release()
	}
}

// send queues m for its destination without blocking: Raft tolerates a
// lost message, a stalled Raft loop it does not.
func (t *transport) send(m *pb.Message) {
	l, ok := t.link(m.GetTo())
	if !ok {
		return
	}
	select {
	case l.out <- m:
		t.o.m.raftSent.Add(1)
	default:
		t.o.m.raftDropped.Add(1)
		t.report(report{to: m.GetTo(), snapshot: m.GetType() == pb.MessageType_MsgSnap})
	}
}

func (t *transport) report(r report) {
	select {
	case t.reports <- r:
	default: // the loop is behind; raft retries on its own
	}
}

// sender streams l's queue to the member, reconnecting after errors.
func (t *transport) sender(l *link) {
	defer t.wg.Done()
	// The stream names its channel: the process at the other end may
	// order several (Channels routes the stream by it).
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), ChannelHeader, t.o.cfg.Channel))
	defer cancel()
	go func() {
		select {
		case <-t.stop:
		case <-l.gone:
		}
		cancel()
	}()
	var stream grpc.ClientStream
	buf := &wrapperspb.BytesValue{}
	for {
		var m *pb.Message
		select {
		case m = <-l.out:
		case <-t.stop:
			return
		case <-l.gone:
			return
		}
		raw, err := proto.Marshal(m)
		if err == nil && stream == nil {
			stream, err = l.conn.NewStream(ctx, &clusterDesc.Streams[0], "/"+clusterService+"/Step")
		}
		if err == nil {
			buf.Value = raw
			err = stream.SendMsg(buf)
			if errors.Is(err, io.EOF) { // the server ended the stream: its status says why
				err = stream.RecvMsg(&wrapperspb.BytesValue{})
				if update := removedUpdate(err); update != nil {
					t.report(report{to: l.p.ID, removedBy: update})
				}
			}
		}
		isSnap := m.GetType() == pb.MessageType_MsgSnap
		l.up.Store(err == nil)
		if err != nil {
			if stream != nil {
				stream.CloseSend()
				stream = nil
			}
			t.report(report{to: l.p.ID, snapshot: isSnap})
			t.o.m.raftSendErrors.Add(1)
			select { // do not spin on a dead peer
			case <-time.After(50 * time.Millisecond):
			case <-t.stop:
				return
			case <-l.gone:
				return
			}
			continue
		}
		if isSnap {
			t.report(report{to: l.p.ID, snapshot: true, ok: true})
		}
	}
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

// forwarded takes a transaction a follower admitted (creator and
// signature already checked there) and queues it here, on the leader.
func (t *transport) forwarded(ctx context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	from, err := t.member(ctx)
	if err != nil {
		return nil, t.refuse("forwarded transaction", refuseNotMember, err)
	}
	if api.IsConfigEnvelope(in.Value) { // checked on the follower; the leader checks again when it proposes
		env, _, err := api.DecodeConfigEnvelope(in.Value)
		if err != nil {
			return nil, t.refuse("forwarded config update", refuseMalformed, fmt.Errorf("from orderer %d: %w", from, err))
		}
		return t.queueForwarded(ctx, admitted{raw: in.Value, id: env.ID(), config: true})
	}
	if api.IsMembersEnvelope(in.Value) { // checked on the follower and again here, against the leader's lists
		a, err := t.o.admitMembers(in.Value)
		if err != nil {
			return nil, t.refuse("forwarded membership update", refuseMalformed, fmt.Errorf("from orderer %d: %w", from, err))
		}
		return t.queueForwarded(ctx, a)
	}
	tx, _, err := api.DecodeTx(in.Value)
	if err != nil {
		return nil, t.refuse("forwarded transaction", refuseMalformed, fmt.Errorf("from orderer %d: %w", from, err))
	}
	if ch := tx.Payload.Header.Channel; ch != t.o.cfg.Channel {
		return nil, status.Errorf(codes.NotFound, "%v: tx %s is for channel %q, this orderer orders %q", ErrWrongChannel, tx.ID(), ch, t.o.cfg.Channel)
	}
	return t.queueForwarded(ctx, admitted{raw: in.Value, id: tx.ID()})
}

func (t *transport) queueForwarded(ctx context.Context, a admitted) (*wrapperspb.BytesValue, error) {
	t.o.m.forwardedIn.Add(1)
	if err := t.o.enqueue(ctx, a); err != nil {
		return nil, status.Error(grpcCode(err), err.Error())
	}
	return &wrapperspb.BytesValue{}, nil
}

// forward sends an admitted transaction to the leader and maps its answer
// back to this package's errors.
func (t *transport) forward(ctx context.Context, leader uint64, a admitted) error {
	l, ok := t.link(leader)
	if !ok {
		return fmt.Errorf("%w: tx %s: leader %d is not a known peer", ErrUnavailable, a.id, leader)
	}
	err := l.conn.Invoke(ctx, "/"+clusterService+"/Forward", &wrapperspb.BytesValue{Value: a.raw}, &wrapperspb.BytesValue{})
	if err == nil {
		t.o.m.forwardedOut.Add(1)
		return nil
	}
	s := status.Convert(err)
	switch s.Code() {
	case codes.ResourceExhausted:
		return fmt.Errorf("%w: tx %s: leader %s/%s: %s", ErrOverloaded, a.id, l.p.Org, l.p.Name, s.Message())
	case codes.Canceled, codes.DeadlineExceeded:
		if ctx.Err() != nil {
			return fmt.Errorf("orderer: forwarding tx %s: %w", a.id, ctx.Err())
		}
	}
	return fmt.Errorf("%w: tx %s: forwarding to the leader, orderer %d (%s/%s at %s): %s",
		ErrUnavailable, a.id, leader, l.p.Org, l.p.Name, l.p.Address, s.Message())
}

// grpcCode maps an enqueue error to the code forward maps back.
func grpcCode(err error) codes.Code {
	switch {
	case errors.Is(err, ErrOverloaded):
		return codes.ResourceExhausted
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Unavailable
}
