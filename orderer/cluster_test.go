package orderer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/orderer/cut"
)

var raftBlock = cut.Config{MaxTxs: 7, Timeout: 30 * time.Millisecond}

// submitN submits n fresh transactions round-robin over the members in
// idx (followers forward to the leader) and returns their ids.
func (c *cluster) submitN(n int, prefix string, idx ...int) map[string]bool {
	c.t.Helper()
	ids := map[string]bool{}
	for k := range n {
		raw, id := c.n.tx(c.t, fmt.Sprintf("%s-%d", prefix, k))
		c.submit(idx[k%len(idx)], raw)
		ids[id] = true
	}
	return ids
}

// checkAll waits until every running member holds exactly the want
// transactions, each once, and the same chain.
func (c *cluster) checkAll(want map[string]bool) {
	c.t.Helper()
	first := -1
	for i, m := range c.members {
		if m.o == nil {
			continue
		}
		blks := c.waitTxs(i, len(want))
		once(c.t, txIDs(c.t, blks), want)
		if first < 0 {
			first = i
			checkChain(c.t, c.n.reg, nil, blks)
			continue
		}
		sameChain(c.t, c.n.reg, stored(c.t, c.members[first].store), blks, fmt.Sprintf("orderer %d", m.id))
	}
}

// TestRaftClusterOrders: three and five orderers, block and stream mode,
// order transactions submitted at every member (followers forward to
// the leader); every block store ends with the same chain (header
// hashes), each transaction exactly once, each block signed by the
// orderer that stored it.
func TestRaftClusterOrders(t *testing.T) {
	for _, c := range []struct {
		size  int
		batch cut.Config
	}{
		{3, raftBlock},
		{3, cut.Config{Mode: cut.ModeStream, MaxTxs: 50}},
		{5, raftBlock},
	} {
		t.Run(fmt.Sprintf("%d-%s", c.size, c.batch.Mode), func(t *testing.T) {
			cl := newCluster(t, c.size, c.batch, nil)
			lead := cl.leader()
			all := make([]int, c.size)
			for i := range all {
				all[i] = i
			}
			want := cl.submitN(60, "k", all...)
			cl.checkAll(want)
			m := cl.members[lead].o.Metrics()
			if m.Raft == nil || m.Raft.Leader != uint64(lead+1) || m.Raft.Proposals == 0 || m.Raft.ProposalsApplied == 0 ||
				m.Raft.ForwardedIn == 0 || m.Raft.WAL.Fsyncs == 0 {
				t.Fatalf("leader metrics: %v", m)
			}
			if !strings.Contains(cl.members[lead].logs.String(), "raft leader changed") {
				t.Fatalf("no leadership log line on the leader:\n%s", cl.members[lead].logs)
			}
			// The key node is the caller's (node.Logger names the node
			// with it); the orderer's own records must not repeat it.
			if l := cl.members[lead].logs.String(); strings.Contains(l, " node=") || !strings.Contains(l, " raft_id=") {
				t.Fatalf("the orderer's log uses the key node, or lacks raft_id:\n%s", l)
			}
		})
	}
}

// TestRaftLeaderCrashAndRestart: the leader is crashed (its Raft loop
// stopped at once, nothing flushed); the others elect a new leader and
// go on ordering; the old leader restarted from its directories catches
// up to the same chain. No transaction is lost or duplicated.
//
// Compaction every few entries, keeping some behind each snapshot, makes
// the restart replay a log that starts before its latest snapshot.
func TestRaftLeaderCrashAndRestart(t *testing.T) {
	cl := newCluster(t, 3, raftBlock, func(rc *RaftConfig) { rc.SnapshotEntries, rc.KeepEntries = 5, 3 })
	old := cl.leader()
	want := cl.submitN(30, "a", 0, 1, 2)
	cl.checkAll(want)

	cl.stop(old, true)
	lead := cl.leader()
	if lead == old {
		t.Fatalf("orderer %d still leads after its crash", old+1)
	}
	live := cl.except(old)
	for id := range cl.submitN(30, "b", live...) {
		want[id] = true
	}
	cl.checkAll(want)

	cl.start(old)
	cl.checkAll(want)
	if l := cl.members[lead].logs.String(); !strings.Contains(l, "state=StateLeader") || !strings.Contains(l, fmt.Sprintf("previous=%d", old+1)) {
		t.Fatalf("the new leader did not log its election, naming the old leader %d:\n%s", old+1, l)
	}
	// And the restarted member takes part: order more at it.
	for id := range cl.submitN(10, "c", old) {
		want[id] = true
	}
	cl.checkAll(want)
}

// TestRaftRestartCatchesUpFromSnapshot: with compaction every few
// entries, a follower that was down while the log moved on gets a
// snapshot (height and hash) and fetches the missing blocks from another
// orderer's Deliver, then orders on with the others.
func TestRaftRestartCatchesUpFromSnapshot(t *testing.T) {
	cl := newCluster(t, 3, cut.Config{MaxTxs: 2, Timeout: 20 * time.Millisecond}, func(rc *RaftConfig) {
		rc.SnapshotEntries, rc.KeepEntries = 4, 1
	})
	lead := cl.leader()
	follower := (lead + 1) % 3
	want := cl.submitN(6, "a", lead)
	cl.checkAll(want)
	cl.stop(follower, false)
	for id := range cl.submitN(40, "b", lead) {
		want[id] = true
	}
	cl.checkAll(want)
	// Let the leader snapshot past what the follower has.
	deadline := time.Now().Add(5 * time.Second)
	for cl.members[lead].o.Metrics().Raft.Snapshots == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cl.start(follower)
	cl.checkAll(want)
	m := cl.members[follower].o.Metrics().Raft
	if m.SnapshotsIn == 0 || m.CatchUpBlocks == 0 {
		t.Fatalf("the follower caught up without a snapshot (installed %d, fetched %d blocks): %v", m.SnapshotsIn, m.CatchUpBlocks, m)
	}
	for id := range cl.submitN(6, "c", follower) {
		want[id] = true
	}
	cl.checkAll(want)
}

// TestRaftRefusesStrangers: the Cluster service refuses callers that are
// not member orderers (a peer's certificate, an orderer certificate of
// the right org that is not in the cluster), messages whose sender is not
// the authenticated member, and drops messages of a stale term; each
// refusal is logged with the sender and the reason, and the cluster goes
// on ordering.
func TestRaftRefusesStrangers(t *testing.T) {
	cl := newCluster(t, 3, raftBlock, nil)
	lead := cl.leader()
	target := cl.members[lead]
	stepAs := func(clientTLS *tls.Config, msg *pb.Message) error {
		conn, err := grpc.NewClient(target.addr, grpc.WithTransportCredentials(credentials.NewTLS(clientTLS)))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := conn.NewStream(ctx, &clusterDesc.Streams[0], "/"+clusterService+"/Step")
		if err != nil {
			return err
		}
		raw, _ := proto.Marshal(msg)
		if err := s.SendMsg(&wrapperspb.BytesValue{Value: raw}); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		s.CloseSend()
		return s.RecvMsg(&wrapperspb.BytesValue{})
	}
	heartbeat := func(from, term uint64) *pb.Message {
		return &pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(from), To: proto.Uint64(target.id), Term: proto.Uint64(term)}
	}
	_, peerTLS := cl.tlsPair(cl.n.org1CA, "peer1", identity.RolePeer)
	_, strangerTLS := cl.tlsPair(cl.n.ordererCA, "orderer9", identity.RoleOrderer)
	other := cl.members[(lead+1)%3]
	for _, c := range []struct {
		name string
		tls  *tls.Config
		msg  *pb.Message
		want string
	}{
		{"peer certificate", peerTLS, heartbeat(2, 1), "has role peer, want orderer"},
		{"orderer outside the cluster", strangerTLS, heartbeat(9, 1), "OrdererOrg/orderer9"},
		{"member posing as another", other.clientTLS, heartbeat(other.id%3+1, 100), fmt.Sprintf("arrived from orderer %d", other.id)},
	} {
		err := stepAs(c.tls, c.msg)
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want PermissionDenied naming %q", c.name, err, c.want)
		}
		if !strings.Contains(target.logs.String(), c.want) {
			t.Errorf("%s: refusal not logged with %q:\n%s", c.name, c.want, target.logs)
		}
	}
	// Forward from a non-member is refused as well.
	conn, err := grpc.NewClient(target.addr, grpc.WithTransportCredentials(credentials.NewTLS(strangerTLS)))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := cl.n.tx(t, "sneaky")
	err = conn.Invoke(context.Background(), "/"+clusterService+"/Forward", &wrapperspb.BytesValue{Value: raw}, &wrapperspb.BytesValue{})
	conn.Close()
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("forward from a non-member: %v, want PermissionDenied", err)
	}
	// A stale-term message from a real member is counted and logged (and
	// stepped: raft answers it with the current term).
	before := target.o.Metrics().Raft
	if err := stepAs(other.clientTLS, heartbeat(other.id, before.Term-1)); err != nil && before.Term > 1 {
		t.Fatalf("stale heartbeat stream: %v", err)
	}
	if before.Term > 1 {
		if after := target.o.Metrics().Raft; after.StaleTerm <= before.StaleTerm {
			t.Errorf("stale-term message not counted: %d -> %d", before.StaleTerm, after.StaleTerm)
		}
		if !strings.Contains(target.logs.String(), fmt.Sprintf("is older than this orderer's term %d", before.Term)) {
			t.Errorf("stale-term message not logged with the sender and reason:\n%s", target.logs)
		}
	}
	if got := target.o.Metrics().Raft.Refused; got < 4 {
		t.Errorf("Refused = %d, want at least 4", got)
	}
	cl.checkAll(cl.submitN(10, "k", 0, 1, 2))
}

// TestRaftDeposedLeaderProposesAgain: a leader proposes a batch, then
// everything it sends is lost (a partition, or a leader stalled in a
// slow fsync past the election timeout), so the batch reaches no other
// log. The others elect a new leader. When the old leader hears again,
// raft overwrites its uncommitted entry; once it applies the new term's
// first entry it knows the batch is in no committed log and proposes it
// again. Every transaction is ordered exactly once, on every member,
// although no client resubmitted (without the retry it fails: the batch
// is lost). Block and stream mode (whose in-flight
// count must come out even: it orders on afterwards).
func TestRaftDeposedLeaderProposesAgain(t *testing.T) {
	// Block mode cuts by count alone (threes), so that the cut-off
	// leader proposes exactly one batch however slow the machine.
	byCount := cut.Config{MaxTxs: 3, Timeout: time.Minute}
	for name, batch := range map[string]cut.Config{"block": byCount, "stream": {Mode: cut.ModeStream, MaxTxs: 50}} {
		t.Run(name, func(t *testing.T) {
			cl := newCluster(t, 3, batch, nil)
			old := cl.leader()
			want := cl.submitN(6, "a", 0, 1, 2)
			cl.checkAll(want)

			o := cl.members[old].o
			proposed := o.Metrics().Raft.Proposals
			lose := func(*pb.Message) bool { return true }
			o.raft.tr.lose.Store(&lose)
			// One batch, proposed while it still leads (stream mode cuts
			// the first transaction alone; the next would be proposed
			// after it stepped down, forwarded, and lost with the
			// partition: their clients would resubmit them).
			n := 3
			if batch.Mode == cut.ModeStream {
				n = 1
			}
			for id := range cl.submitN(n, "lost", old) {
				want[id] = true
			}
			deadline := time.Now().Add(10 * time.Second)
			for o.Metrics().Raft.Proposals == proposed {
				if time.Now().After(deadline) {
					t.Fatalf("the cut-off leader proposed nothing: %v", o.Metrics())
				}
				time.Sleep(5 * time.Millisecond)
			}
			// A new leader among the others, in a later term.
			term := o.Metrics().Raft.Term
			for {
				l := cl.members[cl.except(old)[0]].o.raft.leader.Load()
				if l != 0 && l != uint64(old+1) && cl.members[l-1].o.Metrics().Raft.Term > term {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no new leader among the others")
				}
				time.Sleep(5 * time.Millisecond)
			}
			o.raft.tr.lose.Store(nil)
			cl.checkAll(want)
			if m := o.Metrics().Raft; m.Retried != 1 {
				t.Fatalf("the deposed leader retried %d batches, want 1: %v\n%s", m.Retried, m, cl.members[old].logs)
			}
			if !strings.Contains(cl.members[old].logs.String(), "proposing again a batch lost") {
				t.Fatalf("no log line for the batch proposed again:\n%s", cl.members[old].logs)
			}
			// And the group orders on, at every member.
			for id := range cl.submitN(6, "b", 0, 1, 2) {
				want[id] = true
			}
			cl.checkAll(want)
		})
	}
}
