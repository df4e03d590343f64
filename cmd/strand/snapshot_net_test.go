package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/node"
)

// TestNetSnapshot replaces a peer of a network of real processes by one
// joined from a snapshot, through the CLI: net up and load; net down;
// `snapshot export` of peer0.Org1; peer0.Org2's data directory deleted and
// refilled by `snapshot join`; net up and Smallbank load, which needs
// peer0.Org2's endorsements (so its state); then both peers answer the
// same balances, the invariant holds, and a tx from before the snapshot
// ordered again is DUPLICATE_TXID on the joined peer.
func TestNetSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network of processes")
	}
	dir, lay := generateTwoPolicyNet(t)
	mustCLI(t, "net", "up", "--dir", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	c1 := netConnect(t, lay, "Org1", "")
	b := strconv.Itoa(netBalance)
	if _, err := c1.Contract(smallbank.Name).SubmitWithRetry(ctx, 3, "create_account", "0", "A0", b, b); err != nil {
		t.Fatal(err)
	}
	netCreateAccounts(t, ctx, c1.Contract(smallbank.Name))
	old, err := c1.Contract("kv").Endorse(ctx, "insert", "old", "v")
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Submit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	pids := readPIDs(t, lay)
	mustCLI(t, "net", "down", "--dir", dir)
	for _, pid := range pids {
		netWaitGone(t, pid)
	}

	peerA, _ := lay.Node("peer0.Org1")
	peerB, _ := lay.Node("peer0.Org2")
	snap := filepath.Join(t.TempDir(), "ch.snapshot")
	out := mustCLI(t, "snapshot", "export", "--config", peerA.Config, "--out", snap)
	t.Logf("snapshot export:\n%s", out)
	m := regexp.MustCompile(`height +(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("snapshot export prints no height:\n%s", out)
	}
	height, _ := strconv.ParseUint(m[1], 10, 64)
	if info := mustCLI(t, "snapshot", "info", snap); !strings.Contains(info, "height    "+m[1]) {
		t.Fatalf("snapshot info disagrees with export:\n%s", info)
	}
	cfgB, err := node.LoadNode(peerB.Config)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := cli(t, "snapshot", "join", "--config", peerB.Config, "--file", snap); err == nil || !strings.Contains(err.Error(), "fresh data directory") {
		t.Fatalf("snapshot join over an existing ledger: err = %v\n%s", err, out)
	}
	if err := os.RemoveAll(cfgB.DataDir); err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot join:\n%s", mustCLI(t, "snapshot", "join", "--config", peerB.Config, "--file", snap))

	mustCLI(t, "net", "up", "--dir", dir)
	c1, c2 := netConnect(t, lay, "Org1", ""), netConnect(t, lay, "Org2", "")
	var delta atomic.Int64
	netLoad(t, ctx, 2*time.Second, &delta, c1.Contract(smallbank.Name), c2.Contract(smallbank.Name))
	last, err := c1.Contract("kv").Submit(ctx, "insert", "last", "v")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Gateway.CommitStatus(ctx, last.TxID); err != nil { // peer0.Org2 has caught up to it
		t.Fatal(err)
	}
	total := compareAccounts(t, ctx, c1.Contract(smallbank.Name), c2.Contract(smallbank.Name))
	if want := int64(netAccounts*2*netBalance) + delta.Load(); total != want {
		t.Fatalf("Smallbank invariant broken after the join: total %d, want %d", total, want)
	}

	// net verify reads the joined peer's chain from where it starts.
	verify := mustCLI(t, "net", "verify", "--dir", dir)
	t.Logf("net verify:\n%s", verify)
	if !strings.Contains(verify, "every block checks") || strings.Contains(verify, "starts at block") {
		t.Fatalf("net verify after the join:\n%s", verify)
	}
	if h := netHeight(t, ctx, c2); h <= height {
		t.Fatalf("peer0.Org2's height %d, want past the snapshot's %d", h, height)
	}

	// The old tx, ordered again, is a duplicate on the joined peer, which
	// still answers its commit status.
	if cs, err := c2.Gateway.CommitStatus(ctx, old.ID()); err != nil || cs.Code != api.TxValidationCode_VALID {
		t.Fatalf("peer0.Org2's commit status of tx %s from before the snapshot: %+v, %v", old.ID(), cs, err)
	}
	if err := old.Submit(ctx); err != nil {
		t.Fatal(err)
	}
	events, errc := c2.Gateway.BlockEvents(ctx, height)
	for ev := range events {
		for i, id := range ev.TxIds {
			if id != old.ID() || ev.Number < height {
				continue
			}
			if code := api.TxValidationCode(ev.Codes[i]); code != api.TxValidationCode_DUPLICATE_TXID {
				t.Fatalf("tx %s ordered again: %v in block %d on peer0.Org2, want DUPLICATE_TXID", id, code, ev.Number)
			}
			return
		}
	}
	t.Fatalf("tx %s ordered again never reached peer0.Org2: %v", old.ID(), fmt.Sprint(<-errc))
}
