package memnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// The read stream (api MemoryNode.Reads): each client keeps one
// long-lived bidirectional stream on which its multi-gets travel,
// multiplexed by id, instead of a unary call each.
//
// Why: with a call per read, most of a remote read's cost was the call's,
// not the lookup's (profiled under YCSB-A: the B-tree lookup and copy
// under 10% of the memory node's CPU): gRPC's stream set-up and teardown
// (HEADERS and trailers, HPACK, a stream's state on both ends), the
// hand-off of each new stream to a server worker, and the waking of
// that worker. On the stream, a read is one DATA frame each way, and the
// node answers it in the goroutine that received it.
//
// Invariants:
//   - The node serves a stream's messages in order, one at a time, in
//     the stream's handler goroutine, so what one client's reads hold on
//     the node is one message and its answer (HTTP/2 flow control holds
//     the rest back on the client). Different clients' streams are
//     served in parallel.
//   - Every read sent is answered once, by id, or fails with the
//     stream's error: a stream that breaks (connection lost, node
//     stopped, a call timed out) fails every read waiting on it with
//     statedb.ErrUnavailable, and the next read opens a new stream.
//   - The node's Close ends its streams: it sends closing, the client
//     half-closes (no read is sent after), the node answers what it had
//     received and ends the stream; GracefulStop then does not wait.
//   - The fence is unchanged (Client.getMany reads the floor before the
//     read is sent).

// Reads serves one client's read stream.
func (s *service) Reads(stream api.MemoryNode_ReadsServer) error {
	rs := &servedStream{stream: stream}
	if !s.streams.add(rs) {
		return status.Error(codes.Unavailable, "memnode: Reads: the node is stopping")
	}
	defer s.streams.remove(rs)
	var keys []statedb.Key
	var results []statedb.Result
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		out := &api.MemAnswers{Answers: make([]*api.MemAnswer, len(req.GetReads()))}
		for i, r := range req.GetReads() {
			out.Answers[i], keys, results = s.answer(r, keys, results)
		}
		if err := rs.send(out); err != nil {
			return err
		}
	}
}

// answer serves one read of a stream, as GetMany does; keys and results
// are scratch space, returned for the next read.
func (s *service) answer(r *api.MemRead, keys []statedb.Key, results []statedb.Result) (*api.MemAnswer, []statedb.Key, []statedb.Result) {
	defer s.getLat.Since(time.Now())
	s.gets.Add(1)
	a := &api.MemAnswer{Id: r.GetId()}
	fail := func(err error) *api.MemAnswer {
		st := status.Convert(statusOf("GetMany", err))
		a.Code, a.Message = uint32(st.Code()), st.Message()
		return a
	}
	if len(r.GetKeys()) > MaxKeys {
		return fail(fmt.Errorf("%w: GetMany of %d keys, at most %d", ErrBadRequest, len(r.GetKeys()), MaxKeys)), keys, results
	}
	keys = keys[:0]
	for _, k := range r.GetKeys() {
		keys = append(keys, statedb.Key{Namespace: string(k.GetNamespace()), Key: string(k.GetKey())})
	}
	results = append(results[:0], make([]statedb.Result, len(keys))...)
	h, err := s.db.GetManyShared(keys, results)
	if err != nil {
		return fail(err), keys, results
	}
	a.Height = h
	a.Values = make([]*api.MemValue, len(results))
	vals := make([]api.MemValue, len(results)) // one allocation for the answer's values
	for i, res := range results {
		vals[i] = api.MemValue{Found: res.Found, Block: res.Value.Version.Block, Tx: res.Value.Version.Tx}
		if res.Found && !r.GetVersionsOnly() {
			vals[i].Data = res.Value.Data
			if vals[i].Data == nil {
				vals[i].Data = []byte{} // a found empty value stays found and empty
			}
		}
		a.Values[i] = &vals[i]
	}
	clear(results) // drop the values' references until the next read
	return a, keys, results
}

// servedStream is a read stream on the node; send serialises the
// handler's answers and Close's closing message.
type servedStream struct {
	mu     sync.Mutex
	stream api.MemoryNode_ReadsServer
	ended  bool // the handler returned: no more sends
}

func (rs *servedStream) send(m *api.MemAnswers) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.ended {
		return nil
	}
	return rs.stream.Send(m)
}

// streamSet is the node's open read streams, for Close.
type streamSet struct {
	mu     sync.Mutex
	open   map[*servedStream]struct{}
	closed bool
}

func (ss *streamSet) add(rs *servedStream) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return false
	}
	if ss.open == nil {
		ss.open = make(map[*servedStream]struct{})
	}
	ss.open[rs] = struct{}{}
	return true
}

func (ss *streamSet) remove(rs *servedStream) {
	ss.mu.Lock()
	delete(ss.open, rs)
	ss.mu.Unlock()
	rs.mu.Lock()
	rs.ended = true
	rs.mu.Unlock()
}

// close refuses new streams and asks every client to half-close its
// stream. The sends run in the background: a client that does not read
// holds only its own (GracefulStop's cut-off ends it).
func (ss *streamSet) close() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.closed = true
	for rs := range ss.open {
		go func() { _ = rs.send(&api.MemAnswers{Closing: true}) }()
	}
}

// readStreams holds a client's current read stream, opened on first use and
// again after one broke.
type readStreams struct {
	mu  sync.Mutex
	cur *clientStream
	ids atomic.Uint64
}

// clientStream is one open read stream: reads are sent by their callers
// (one at a time, sendMu) and answered to them by the stream's receiver
// goroutine, by id.
type clientStream struct {
	stream api.MemoryNode_ReadsClient
	cancel context.CancelFunc
	owner  *readStreams

	sendMu    sync.Mutex
	halfClose bool // the node is closing: nothing more is sent

	mu      sync.Mutex
	pending map[uint64]*streamRead
	err     error // once broken: the error of every read
}

// streamRead is one read waiting for its answer.
type streamRead struct {
	done chan struct{} // closed when ans or err is set
	ans  *api.MemAnswer
	err  error
}

// errStreamClosing is a read sent on a stream the node is closing.
var errStreamClosing = status.Error(codes.Unavailable, "the memory node is stopping")

// readStream returns the client's open read stream, opening one if needed.
func (c *Client) readStream() (*clientStream, error) {
	r := &c.reads
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		return r.cur, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	// Opening waits for a connection at most a call's timeout.
	t := time.AfterFunc(c.opts.CallTimeout, cancel)
	st, err := c.rpc.Reads(ctx)
	if !t.Stop() && err == nil {
		err = status.Error(codes.DeadlineExceeded, "opening the read stream timed out")
	}
	if err != nil {
		cancel()
		return nil, err
	}
	cs := &clientStream{stream: st, cancel: cancel, owner: r, pending: make(map[uint64]*streamRead)}
	r.cur = cs
	go cs.receive()
	return cs, nil
}

// streamGet sends one multi-get on the read stream and waits for its
// answer, at most the call timeout; a gRPC status error on failure.
func (c *Client) streamGet(keys []*api.MemKey, versionsOnly bool) (*api.MemAnswer, error) {
	cs, err := c.readStream()
	if err != nil {
		return nil, err
	}
	id := c.reads.ids.Add(1)
	p := &streamRead{done: make(chan struct{})}
	cs.mu.Lock()
	if cs.err != nil {
		cs.mu.Unlock()
		return nil, cs.err
	}
	cs.pending[id] = p
	cs.mu.Unlock()
	if err := cs.send(&api.MemReads{Reads: []*api.MemRead{{Id: id, Keys: keys, VersionsOnly: versionsOnly}}}); err != nil {
		if errors.Is(err, errStreamClosing) {
			// Only this read was not sent: the others are answered.
			cs.mu.Lock()
			delete(cs.pending, id)
			cs.mu.Unlock()
			return nil, err
		}
		cs.fail(err)
		<-p.done
		return nil, p.err
	}
	// A node that does not answer within the timeout breaks the stream:
	// every read on it fails, and the next opens another.
	t := time.AfterFunc(c.opts.CallTimeout, func() {
		cs.fail(status.Error(codes.DeadlineExceeded, "no answer within the call timeout"))
	})
	<-p.done
	t.Stop()
	return p.ans, p.err
}

func (cs *clientStream) send(m *api.MemReads) error {
	cs.sendMu.Lock()
	defer cs.sendMu.Unlock()
	if cs.halfClose {
		return errStreamClosing
	}
	if err := cs.stream.Send(m); err != nil {
		if errors.Is(err, io.EOF) {
			// The stream ended: Recv says why (the receiver fails it).
			return status.Error(codes.Unavailable, "the read stream ended")
		}
		return err
	}
	return nil
}

// receive hands out answers until the stream ends.
func (cs *clientStream) receive() {
	for {
		m, err := cs.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errStreamClosing
			}
			cs.fail(err)
			return
		}
		if m.GetClosing() {
			cs.closing()
		}
		cs.mu.Lock()
		for _, a := range m.GetAnswers() {
			if q := cs.pending[a.GetId()]; q != nil {
				delete(cs.pending, a.GetId())
				q.ans = a
				close(q.done)
			}
		}
		cs.mu.Unlock()
	}
}

// closing half-closes the stream when the node asks and makes later
// reads open another.
func (cs *clientStream) closing() {
	cs.owner.drop(cs)
	cs.sendMu.Lock()
	defer cs.sendMu.Unlock()
	if !cs.halfClose {
		cs.halfClose = true
		_ = cs.stream.CloseSend()
	}
}

// fail breaks the stream: every read waiting on it fails with err.
func (cs *clientStream) fail(err error) {
	cs.owner.drop(cs)
	cs.mu.Lock()
	if cs.err == nil {
		cs.err = err
	}
	for id, q := range cs.pending {
		delete(cs.pending, id)
		q.err = cs.err
		close(q.done)
	}
	cs.mu.Unlock()
	cs.cancel()
}

// drop forgets cs as the current stream.
func (r *readStreams) drop(cs *clientStream) {
	r.mu.Lock()
	if r.cur == cs {
		r.cur = nil
	}
	r.mu.Unlock()
}

// close ends the current stream (the client's Close).
func (r *readStreams) close() {
	r.mu.Lock()
	cs := r.cur
	r.cur = nil
	r.mu.Unlock()
	if cs != nil {
		cs.fail(status.Error(codes.Canceled, "the client is closed"))
	}
}
