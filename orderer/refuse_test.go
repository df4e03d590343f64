package orderer

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/mux"
)

// TestRateLog: burst lines pass at once, then one per interval; the line
// that passes after a gap reports how many were suppressed. Time is an
// input.
func TestRateLog(t *testing.T) {
	now := time.Unix(0, 0)
	l := newRateLog(3, time.Second, func() time.Time { return now })
	passed := 0
	for range 10 {
		if ok, _ := l.allow("a"); ok {
			passed++
		}
	}
	if passed != 3 {
		t.Fatalf("%d of 10 lines passed at once, want the burst of 3", passed)
	}
	if ok, _ := l.allow("b"); !ok {
		t.Fatal("another kind has its own budget")
	}
	now = now.Add(500 * time.Millisecond)
	if ok, _ := l.allow("a"); ok {
		t.Fatal("a line passed half an interval after the burst")
	}
	now = now.Add(600 * time.Millisecond)
	ok, suppressed := l.allow("a")
	if !ok || suppressed != 8 {
		t.Fatalf("after an interval: ok %v, suppressed %d; want true, 8", ok, suppressed)
	}
	now = now.Add(time.Hour)
	for range 3 {
		if ok, _ := l.allow("a"); !ok {
			t.Fatal("the budget refills to the burst, no further")
		}
	}
	if ok, _ := l.allow("a"); ok {
		t.Fatal("the budget exceeded the burst")
	}
}

// TestRaftRefusalFloodIsRateLimited: hundreds of refused streams from a
// non-member are each refused and counted, the log holds only the
// budget's lines, and the cluster orders on.
func TestRaftRefusalFloodIsRateLimited(t *testing.T) {
	cl := newCluster(t, 3, raftBlock, nil)
	target := cl.members[cl.leader()]
	_, strangerTLS := cl.tlsPair(cl.n.ordererCA, "orderer9", identity.RoleOrderer)
	conn, err := grpc.NewClient(target.addr, grpc.WithTransportCredentials(credentials.NewTLS(strangerTLS)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const flood = 300
	start := time.Now()
	for range flood {
		s, err := conn.NewStream(context.Background(), &clusterDesc.Streams[0], "/"+clusterService+"/Step")
		if err == nil {
			s.CloseSend()
			err = s.RecvMsg(new(api.DeliverResponse))
		}
		if err == nil {
			t.Fatal("a stream from a non-member was accepted")
		}
	}
	m := target.o.Metrics().Raft
	if m.RefusedBy["not_member"] < flood || m.Refused < flood {
		t.Errorf("refused %d (not_member %d), want at least %d", m.Refused, m.RefusedBy["not_member"], flood)
	}
	lines := strings.Count(target.logs.String(), "raft: refused raft stream")
	budget := refusalLogBurst + int(time.Since(start)/refusalLogEvery) + 1 // the burst, then one a second
	if lines < 1 || lines > budget || lines >= flood/2 {
		t.Errorf("%d log lines for %d refusals in %s, want at most %d (the burst of %d, then one a second)",
			lines, flood, time.Since(start).Round(time.Millisecond), budget, refusalLogBurst)
	}
	cl.checkAll(cl.submitN(10, "k", 0, 1, 2))
}

// byzantineOrderer serves, as Deliver, whatever blocks its test gives
// it: an orderer gone bad, on real gRPC with mutual TLS.
type byzantineOrderer struct {
	api.UnimplementedOrdererServer
	blocks [][]byte
}

func (b *byzantineOrderer) Deliver(_ *api.DeliverRequest, s grpc.ServerStreamingServer[api.DeliverResponse]) error {
	for _, raw := range b.blocks {
		if err := s.Send(&api.DeliverResponse{Block: raw}); err != nil {
			return err
		}
	}
	return nil
}

// TestCatchUpRefusesBadBlocks: a member catching up refuses a block that
// an orderer did not sign, that a stranger signed, that breaks the hash
// chain, or whose data hash is wrong; each refusal names the sender and
// the reason and is counted, and the store is untouched.
func TestCatchUpRefusesBadBlocks(t *testing.T) {
	cl := newCluster(t, 3, raftBlock, nil)
	want := cl.submitN(5, "a", 0)
	cl.checkAll(want)
	victim := cl.members[0]
	cl.stop(1, false) // its orderer signer is used below; keep it from ordering meanwhile
	cl.stop(2, false) // no quorum: the victim's store stands still
	h := victim.store.Height()
	prev := victim.store.LastHash()
	tx, _ := cl.n.tx(t, "forged")
	build := func(prev []byte, s api.Signer) []byte {
		b, err := api.BuildBlock(h, prev, [][]byte{tx}, s)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := proto.Marshal(b)
		return raw
	}
	badData := func() []byte {
		b, _ := api.BuildBlock(h, prev, [][]byte{tx}, cl.members[1].signer)
		b.Transactions = [][]byte{tx, tx}
		raw, _ := proto.Marshal(b)
		return raw
	}
	stranger, err := identity.NewCA("OrdererOrg", identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	strangeSigner, err := stranger.Issue("orderer1", identity.RoleOrderer, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	srvTLS, _ := cl.tlsPair(cl.n.ordererCA, "orderer9", identity.RoleOrderer)
	for _, c := range []struct {
		name  string
		block []byte
		want  string
	}{
		{"unsigned", build(prev, nil), "signer"},
		{"signed by a peer", build(prev, cl.n.peer1), "role peer, want orderer"},
		{"signed by a stranger's CA", build(prev, strangeSigner), "block " + strconv.FormatUint(h, 10) + " signer"},
		{"breaks the hash chain", build([]byte("not the previous hash, 32 bytes!"), cl.members[1].signer), "does not link to the stored block"},
		{"wrong data hash", badData(), "data hash does not match"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(srvTLS)))
			api.RegisterOrdererServer(srv, &byzantineOrderer{blocks: [][]byte{c.block}})
			go srv.Serve(lis)
			defer srv.Stop()
			conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(victim.clientTLS)))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			l := &link{p: RaftPeer{ID: 9, Org: "OrdererOrg", Name: "orderer9", Address: lis.Addr().String()}, conn: mux.NewConn(conn)}
			before := victim.o.Metrics().Raft.RefusedBy["bad_block"]
			err = victim.o.fetch(l, h+1)
			if !errors.Is(err, errBadBlock) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("fetch: %v, want a refused block naming %q", err, c.want)
			}
			victim.o.fetchFailed(l, err)
			if got := victim.o.Metrics().Raft.RefusedBy["bad_block"]; got != before+1 {
				t.Errorf("bad_block refusals %d → %d, want one more", before, got)
			}
			logs := victim.logs.String()
			if !strings.Contains(logs, "refused a block fetched in catch-up") || !strings.Contains(logs, "from_name=OrdererOrg/orderer9") ||
				!strings.Contains(logs, c.want) {
				t.Errorf("refusal not logged with the sender and %q:\n%s", c.want, logs)
			}
			if victim.store.Height() != h {
				t.Fatalf("the store grew to %d on a refused block", victim.store.Height())
			}
		})
	}
	// The cluster goes on once its members are back.
	cl.start(1)
	cl.start(2)
	cl.leader()
	for id := range cl.submitN(5, "b", 0, 1, 2) {
		want[id] = true
	}
	cl.checkAll(want)
}
