package node_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/node"
)

// TestRaftNetwork: with three orderers in the channel, the nodes form a
// Raft cluster; transactions commit through it, and keep committing after
// the leader stops; the peers end with the same chain and state.
func TestRaftNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	n := startNetwork(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	org1, org2 := n.connect(t, 0), n.connect(t, 1)
	submit := func(i int) {
		t.Helper()
		id := fmt.Sprint("acct", i)
		c := org1
		if i%2 == 1 {
			c = org2
		}
		commit, err := c.SubmitWithRetry(ctx, 50, "create_account", id, id, "100", "0")
		if err != nil || commit.Code != api.TxValidationCode_VALID {
			t.Fatalf("create_account %s: %v %v", id, commit, err)
		}
	}
	for i := range 6 {
		submit(i)
	}
	leader := raftLeader(t, n.orderers)
	if m := n.orderers[leader].Orderer.Metrics(); m.Raft == nil || m.Raft.Leader != m.Raft.ID {
		t.Fatalf("orderer %d is not the leader it claims: %+v", leader, m.Raft)
	}
	scrape(t, n.orderers[leader].MetricsAddr(), "# TYPE strand_orderer_raft_term gauge", "strand_orderer_raft_leader",
		"strand_orderer_raft_commit", "strand_orderer_raft_applied",
		"# TYPE strand_orderer_raft_proposal_seconds histogram", `strand_orderer_raft_proposal_seconds_bucket{le="0.0016"}`,
		"# TYPE strand_orderer_raft_wal_fsync_seconds histogram", "strand_orderer_raft_wal_fsync_seconds_count",
		`strand_orderer_raft_refused_by_total{kind="not_member"}`, "strand_orderer_raft_config_seq")
	if err := n.orderers[leader].Close(); err != nil {
		t.Fatal(err)
	}
	live := append(append([]*node.Orderer(nil), n.orderers[:leader]...), n.orderers[leader+1:]...)
	start := time.Now()
	for i := 6; i < 12; i++ {
		submit(i)
	}
	t.Logf("6 transactions committed in %v after the leader stopped", time.Since(start).Round(time.Millisecond))
	// Every live orderer and both peers reach the same height and hash.
	deadline := time.Now().Add(30 * time.Second)
	for {
		h := live[0].Orderer.Height()
		if live[1].Orderer.Height() == h && n.peers[0].Committer.Height() == h && n.peers[1].Committer.Height() == h {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heights: orderers %d, %d; peers %d, %d", live[0].Orderer.Height(), live[1].Orderer.Height(),
				n.peers[0].Committer.Height(), n.peers[1].Committer.Height())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if h0, h1 := n.peers[0].Store.LastHash(), n.peers[1].Store.LastHash(); string(h0) != string(h1) {
		t.Fatal("peers disagree on the last block hash")
	}
	if s0, s1 := dump(t, n.peers[0].State), dump(t, n.peers[1].State); !reflect.DeepEqual(s0, s1) {
		t.Fatal("peers' states differ")
	}
	if got := len(dump(t, n.peers[0].State)); got != 12*3 { // each account: name, checking, savings keys
		t.Logf("state holds %d keys", got)
	}
	for _, p := range n.peers {
		if err := p.Store.VerifyChain(); err != nil {
			t.Fatal(err)
		}
	}
}

// raftLeader returns the index of the orderer that leads, waiting for one.
func raftLeader(t *testing.T, os []*node.Orderer) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, o := range os {
			if m := o.Orderer.Metrics(); m.Raft != nil && m.Raft.Leader == m.Raft.ID {
				return i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no Raft leader")
	return -1
}
