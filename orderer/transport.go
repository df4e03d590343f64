package orderer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/strand-ledger/strand/mux"
)

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
	// lose, when set (tests only), loses every outgoing message it
	// returns true for, as a network partition would.
	lose atomic.Pointer[func(*pb.Message) bool]

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
	if lose := t.lose.Load(); lose != nil && (*lose)(m) {
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
