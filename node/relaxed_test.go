package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

// TestRelaxedPeerAfterMachineCrash: a peer with relaxed durability answers
// commits before its fsync. Simulate a machine crash that loses the tail
// of its block store but not its state database (the worst case: the
// state is ahead of the blocks): on restart it rebuilds its state from its
// blocks, fetches the lost blocks from the orderer, validates them again
// and ends with the other peer's chain and state.
func TestRelaxedPeerAfterMachineCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	n := startNetworkWith(t, 1, func(c *node.NodeConfig) { c.Pipeline.Durability = "relaxed" })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	org1 := n.connect(t, 0)
	for i := range 30 {
		id := fmt.Sprint("r", i)
		if c, err := org1.SubmitWithRetry(ctx, 20, "create_account", id, id, "10", "10"); err != nil || c.Code != api.TxValidationCode_VALID {
			t.Fatalf("create_account %s: %v %v", id, c, err)
		}
	}
	n.waitSameHeight(t)
	victim := n.peers[1]
	var cfg *node.NodeConfig
	for _, c := range n.configs {
		if c.Role == identity.RolePeer.String() && c.Name == victim.Name {
			cfg = c
		}
	}
	height := victim.Committer.Height()
	if err := victim.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := filepath.Glob(filepath.Join(cfg.DataDir, "blocks", "blocks", "*.seg"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segments in %s: %v", cfg.DataDir, err)
	}
	sort.Strings(segs)
	st, err := os.Stat(segs[len(segs)-1])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segs[len(segs)-1], st.Size()/2); err != nil {
		t.Fatal(err)
	}
	p, err := node.StartPeer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	n.peers[1] = p
	t.Logf("peer height %d before the crash; the store kept %d blocks", height, p.Store.Stats().LastRepair.Scanned)
	n.waitSameHeight(t)
	if h0, h1 := n.peers[0].Store.LastHash(), p.Store.LastHash(); string(h0) != string(h1) {
		t.Fatal("peers disagree on the last block hash")
	}
	if s0, s1 := dump(t, n.peers[0].State), dump(t, p.State); !reflect.DeepEqual(s0, s1) {
		t.Fatal("the restarted peer's state differs")
	}
	if err := p.Store.VerifyChain(); err != nil {
		t.Fatal(err)
	}
}
