package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/snapshot"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestSnapshotJoin runs a network, exports a snapshot of Org1's running
// peer A, replaces Org2's peer B by a fresh one joined from the
// snapshot, and runs more load: B follows the orderer from the
// snapshot's height, ends with A's chain and state, answers the commit
// status of a tx committed before the snapshot, and marks that tx
// DUPLICATE_TXID when it is ordered again.
func TestSnapshotJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	n := startNetwork(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	org1 := n.connect(t, 0)
	mustSubmit := func(c *client.Contract, fn string, args ...string) {
		t.Helper()
		commit, err := c.SubmitWithRetry(ctx, 50, fn, args...)
		if err != nil {
			t.Fatalf("%s%q: %v", fn, args, err)
		}
		if commit.Code != api.TxValidationCode_VALID {
			t.Fatalf("%s%q committed %v", fn, args, commit.Code)
		}
	}
	old, err := org1.Endorse(ctx, "create_account", "alice", "Alice", "1000", "0")
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Submit(ctx); err != nil {
		t.Fatal(err)
	}
	oldCommit, err := old.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		mustSubmit(org1, "create_account", fmt.Sprint("acct", i), "A", "100", "0")
	}
	n.waitSameHeight(t)

	a := n.peers[0]
	path := filepath.Join(t.TempDir(), "ch.snapshot")
	info, err := a.ExportSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Height < 7 || info.Channel != n.ch.Channel || info.TxIDs < 6 {
		t.Fatalf("snapshot: %v", info)
	}

	// Replace Org2's peer by a fresh one from the snapshot.
	cfgB := n.peerConfig(t, 1)
	if err := n.peers[1].Close(); err != nil {
		t.Fatal(err)
	}
	used := cfgB.DataDir
	cfgB.DataDir = filepath.Join(t.TempDir(), "peer-b")
	if _, err := node.JoinSnapshot(&node.NodeConfig{Role: "orderer", Name: "o"}, path); err == nil {
		t.Fatal("JoinSnapshot for an orderer succeeded")
	}
	usedCfg := *cfgB
	usedCfg.DataDir = used
	if _, err := node.JoinSnapshot(&usedCfg, path); err == nil || !strings.Contains(err.Error(), "fresh data directory") {
		t.Fatalf("JoinSnapshot into a used data directory: err = %v", err)
	}
	if _, err := node.JoinSnapshot(cfgB, path); err != nil {
		t.Fatal(err)
	}
	b, err := node.StartPeer(cfgB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	n.peers[1] = b
	if base := b.Store.Base(); base.Height != info.Height {
		t.Fatalf("B's block store starts at %d, want the snapshot's height %d", base.Height, info.Height)
	}
	if _, err := b.Store.RawBlock(1); !errors.Is(err, ledger.ErrBeforeBase) {
		t.Fatalf("B's RawBlock(1): err = %v, want ErrBeforeBase", err)
	}

	// More load, through both orgs' peers.
	org2 := n.connect(t, 1)
	for i := range 5 {
		mustSubmit(org2, "create_account", fmt.Sprint("bcct", i), "B", "100", "0")
		mustSubmit(org1, "deposit_checking", fmt.Sprint("acct", i), "5")
	}
	n.waitSameHeight(t)

	// The commit status of the old tx, on B.
	cs, err := n.gateway(t, 1).CommitStatus(ctx, old.ID())
	if err != nil || cs.Block != oldCommit.Block || cs.Code != api.TxValidationCode_VALID {
		t.Fatalf("B's commit status of tx %s from before the snapshot: %+v, %v; want block %d VALID", old.ID(), cs, err, oldCommit.Block)
	}
	// Block events from before the snapshot are not on B, and it says so.
	events, errc := n.gateway(t, 1).BlockEvents(ctx, 0)
	for range events {
		t.Fatal("B sent an event for a block below its snapshot")
	}
	err = <-errc
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("starts at block %d", info.Height)) {
		t.Fatalf("B's block events from 0: err = %v, want one saying where its ledger starts", err)
	}
	if start, ok := gateway.LedgerStart(err); !ok || start != info.Height {
		t.Fatalf("gateway.LedgerStart of B's refusal: %d, %v; want the snapshot's height %d from the status detail", start, ok, info.Height)
	}
	// Ordered again, the old tx is a duplicate on both peers.
	before := n.orderer.Orderer.Height()
	if err := n.orderer.Orderer.Submit(ctx, old.Bytes()); err != nil {
		t.Fatal(err)
	}
	for n.orderer.Orderer.Height() == before {
		if ctx.Err() != nil {
			t.Fatal("the resubmitted tx was not ordered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	n.waitSameHeight(t)
	for i, p := range n.peers {
		if code := codeOf(t, p.Store, before, old.ID()); code != api.TxValidationCode_DUPLICATE_TXID {
			t.Errorf("peer %d: the resubmitted tx from before the snapshot committed %v, want DUPLICATE_TXID", i, code)
		}
	}

	// Same chain, same state.
	if string(a.Store.LastHash()) != string(b.Store.LastHash()) {
		t.Fatal("A and B disagree on the last block hash")
	}
	if sa, sb := dumpAll(t, a.State), dumpAll(t, b.State); sa != sb {
		t.Fatalf("A's and B's states differ:\n%s\n---\n%s", sa, sb)
	}
	if err := b.Store.VerifyChain(); err != nil {
		t.Fatal(err)
	}
}

// peerConfig returns a copy of the config of the i-th peer of n.
func (n *network) peerConfig(t *testing.T, i int) *node.NodeConfig {
	t.Helper()
	for _, cfg := range n.configs {
		if cfg.Role != identity.RolePeer.String() {
			continue
		}
		if i == 0 {
			c := *cfg
			return &c
		}
		i--
	}
	t.Fatalf("no peer %d", i)
	return nil
}

// codeOf returns the validation code of tx id in the blocks of s from
// block from on.
func codeOf(t *testing.T, s *ledger.BlockStore, from uint64, id string) api.TxValidationCode {
	t.Helper()
	for h := from; h < s.Height(); h++ {
		blk, err := s.Block(h)
		if err != nil {
			t.Fatal(err)
		}
		for j, raw := range blk.Transactions {
			if tx, _, _ := api.DecodeTx(raw); tx.ID() == id {
				return api.TxValidationCode(blk.Metadata.ValidationCodes[j])
			}
		}
	}
	t.Fatalf("tx %s is in no block from %d on", id, from)
	return 0
}

// dumpAll renders the whole state and its savepoint.
func dumpAll(t *testing.T, db statedb.DB) string {
	t.Helper()
	var sb strings.Builder
	sp, err := db.(statedb.Dumper).Dump(func(ns, key string, v statedb.Value) error {
		fmt.Fprintf(&sb, "%s/%s=%s@%v\n", ns, key, v.Data, v.Version)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&sb, "savepoint %d\n", sp)
	return sb.String()
}

// TestJoinSnapshotRefuses: a snapshot of another channel, or of a
// differently configured one, and the memory backend are refused, and a
// refused join leaves the data directory without a ledger.
func TestJoinSnapshotRefuses(t *testing.T) {
	layout, err := localnet.Generate(t.TempDir(), localnet.Spec{Orgs: 1})
	if err != nil {
		t.Fatal(err)
	}
	var cfg *node.NodeConfig
	for _, nd := range layout.Nodes {
		if nd.Role == identity.RolePeer {
			if cfg, err = node.LoadNode(nd.Config); err != nil {
				t.Fatal(err)
			}
		}
	}
	ch, err := node.LoadChannel(cfg.Channel)
	if err != nil {
		t.Fatal(err)
	}
	genesis := func(doc []byte) []byte {
		raw, err := proto.Marshal(&api.Block{Header: &api.BlockHeader{Number: 0}, Transactions: [][]byte{doc}})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	write := func(channel string, g []byte) string {
		path := filepath.Join(t.TempDir(), "snap")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w, err := snapshot.NewWriter(f, channel, g)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Finish(1, make([]byte, api.HashSize)); err != nil {
			t.Fatal(err)
		}
		return path
	}
	mem := *cfg
	mem.StateDB.Backend = "memory"
	for _, tc := range []struct {
		name string
		cfg  *node.NodeConfig
		path string
		says string
	}{
		{"other channel", cfg, write("other", genesis(ch.Genesis())), `is of channel "other"`},
		{"other configuration", cfg, write(ch.Channel, genesis([]byte(`{"Channel":"x"}`))), "differently configured"},
		{"memory backend", &mem, write(ch.Channel, genesis(ch.Genesis())), "keeps no state on disk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := *tc.cfg
			c.DataDir = filepath.Join(t.TempDir(), "data")
			_, err := node.JoinSnapshot(&c, tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("JoinSnapshot: err = %v, want one saying %q", err, tc.says)
			}
			for _, d := range []string{"blocks", "state", "state.joining"} {
				if _, err := os.Stat(filepath.Join(c.DataDir, d)); err == nil {
					t.Errorf("a refused join left %s", d)
				}
			}
		})
	}
	// The right snapshot joins.
	c := *cfg
	c.DataDir = filepath.Join(t.TempDir(), "data")
	if _, err := node.JoinSnapshot(&c, write(ch.Channel, genesis(ch.Genesis()))); err != nil {
		t.Fatal(err)
	}
}
