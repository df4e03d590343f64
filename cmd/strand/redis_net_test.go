package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
	"github.com/strand-ledger/strand/ledger/statedb/redisdb/redistest"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestNetRedisLoss runs a network of processes in which peer0.Org1 keeps
// its state on a real redis-server without persistence (stateDB.backend:
// redis) and peer0.Org2 on its own Pebble, and makes the Redis lose
// everything twice: FLUSHALL under a Smallbank load while the peer runs,
// then a restart of redis-server, empty, while the peer is stopped. The
// block store is the truth: the peer finds the loss (the savepoint it
// fences every read and write with is gone), re-applies its blocks, and
// goes on. After each, every acknowledged transaction is on both peers at
// its block, every account reads the same on both, and the Smallbank
// invariant holds; at the end, with the network down, both peers' whole
// states (Redis under the peer's prefix, Pebble) have the same savepoint
// and the same hash over every namespace, key, value and version.
func TestNetRedisLoss(t *testing.T) {
	const peer = "peer0.Org1"
	srv := redistest.Start(t)
	redisState := func(n *node.NodeConfig) {
		if n.Name == peer {
			n.StateDB.Backend = backend.Redis
			n.StateDB.Redis.Address, n.StateDB.Redis.Prefix = srv.Socket, "strand-test:"+peer+":"
		}
	}
	n := startRaftNet(t, localnet.Spec{Orderers: 1, TuneNode: redisState})
	admin := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
	defer admin.Close()
	if keys, err := admin.DBSize(context.Background()).Result(); err != nil || keys == 0 {
		t.Fatalf("the Redis holds %d keys (%v) after the accounts were opened; want peer0.Org1's state", keys, err)
	}

	// 1. FLUSHALL under load, the peer running.
	logSize := fileSize(n.lay.LogFile(peer))
	l, done := n.load(6 * time.Second)
	time.Sleep(2 * time.Second)
	if err := admin.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	flushedAt := n.height(peer)
	<-done
	n.settle(t, l)
	log := logRepairLines(t, n.lay.LogFile(peer), logSize)
	if !strings.Contains(log, "state restored from the block store") {
		t.Errorf("after FLUSHALL at height %d the peer's log does not say it restored its state:\n%s", flushedAt, log)
	}
	nd, _ := n.lay.Node(peer)
	losses := scrapeGauges(nd.Metrics, "strand_committer_state_losses_total")["strand_committer_state_losses_total"]
	t.Logf("FLUSHALL at height %d; the peer counted %s state losses", flushedAt, losses)
	if losses == "" || losses == "0" {
		t.Errorf("strand_committer_state_losses_total = %q after FLUSHALL; want at least 1", losses)
	}

	// 2. redis-server restarted empty while the peer is down.
	n.kill(t, peer)
	stoppedAt := n.maxHeight(n.orderers()...)
	srv.Restart()
	logSize = fileSize(n.lay.LogFile(peer))
	n.restart(t)
	if log := logRepairLines(t, n.lay.LogFile(peer), logSize); !regexp.MustCompile(`re-applying blocks above the state savepoint".* from=0 `).MatchString(log) {
		t.Errorf("the peer, stopped at about height %d while its Redis restarted empty, does not say it re-applied its blocks from 0:\n%s", stoppedAt, log)
	}
	l2, done2 := n.load(3 * time.Second)
	<-done2
	n.settle(t, l, l2) // the accounts hold both loads' money

	compareStates(t, n, peer, "peer0.Org2")
}

// compareStates stops the network and checks that the named peers'
// state databases, opened from their node files, hold the same savepoint
// and the same state.
func compareStates(t *testing.T, n *raftNet, peers ...string) {
	t.Helper()
	mustCLI(t, "net", "down", "--dir", n.dir)
	got := map[string][]string{}
	for _, name := range peers {
		nd, _ := n.lay.Node(name)
		cfg, err := node.LoadNode(nd.Config)
		if err != nil {
			t.Fatal(err)
		}
		o := cfg.StateDB.Options()
		o.Redis.Address, o.Redis.Prefix = cfg.StateDB.Redis.Address, cfg.StateDB.Redis.Prefix
		db, err := backend.Open(cfg.StateDB.Backend, filepath.Join(cfg.DataDir, "state"), o)
		if err != nil {
			t.Fatalf("opening %s's state (%s): %v", name, cfg.StateDB.Backend, err)
		}
		sp, keys, sum, err := statedb.Digest(db.(statedb.Dumper))
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := fmt.Sprintf("savepoint %d, %d keys, state %s", sp, keys, hex.EncodeToString(sum[:]))
		got[s] = append(got[s], name+" ("+cfg.StateDB.Backend+")")
	}
	if len(got) != 1 {
		t.Fatalf("the peers' states differ: %v", got)
	}
	for s, names := range got {
		t.Logf("%s: %s", strings.Join(names, " and "), s)
	}
}
