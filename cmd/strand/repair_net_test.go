package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strand-ledger/strand/localnet"
)

// TestNetPeerRepairs damages a stopped peer's block store three ways
// (issue #15, findings 3 and 4) and restarts it: with its last frame
// torn (the state is then ahead of the block store), with one flipped
// byte in a block a third of the way up the chain, and with the same
// flip and its block index deleted. Each time the peer must repair
// itself from the ordering service with no operator: rebuild its state,
// fetch and re-validate the damaged block, drop no valid block. Then a
// second load runs, and every node must agree on height and last block
// (net verify), both peers on every account, every acknowledged
// transaction must be on both peers at its block, and the Smallbank
// invariant must hold. The time from restart to repaired is logged with
// the peer's repair log lines. Last, an orderer with a flipped byte
// replaces the damaged block with a copy from the other orderers.
func TestNetPeerRepairs(t *testing.T) {
	n := startRaftNet(t, localnet.Spec{Orderers: 3})
	loads := []*ledgerLoad{}
	l, done := n.load(4 * time.Second)
	<-done
	loads = append(loads, l)
	peer := n.peers()[0]
	for _, tc := range []struct {
		name  string
		want  string // in the peer's log after the restart
		spoil func(t *testing.T, dir string) string
	}{
		{"torn last frame", "rebuilding the state database from the block store: the state database (savepoint", func(t *testing.T, dir string) string {
			fr := frames(t, dir)
			last := fr[len(fr)-1]
			truncate(t, last.path, last.off+last.size/2)
			return "cut block " + itoa(int64(last.num)) + " in half"
		}},
		{"flipped byte", "block store repaired from the ordering service", func(t *testing.T, dir string) string {
			fr := frames(t, dir)
			f := fr[len(fr)/3]
			flipByte(t, f.path, f.off+f.size/2)
			return "flipped a byte of block " + itoa(int64(f.num)) + " of " + itoa(int64(len(fr)))
		}},
		{"flipped byte, index deleted", "block store repaired from the ordering service", func(t *testing.T, dir string) string {
			fr := frames(t, dir)
			f := fr[len(fr)/3+1]
			flipByte(t, f.path, f.off+f.size/2)
			if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
				t.Fatal(err)
			}
			return "flipped a byte of block " + itoa(int64(f.num)) + " of " + itoa(int64(len(fr))) + ", deleted the index"
		}},
	} {
		// A clean stop, so that the state holds every stored block and a
		// torn last block leaves it ahead of the block store, as in the
		// issue.
		if err := syscall.Kill(n.pids[peer], syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		netWaitGone(t, n.pids[peer])
		dir := filepath.Join(n.lay.Dir, "data", peer, "blocks")
		nd, _ := n.lay.Node(peer)
		if out, err := cli(t, "ledger", "check", "--config", nd.Config); err != nil {
			t.Fatalf("ledger check of the stopped, sound peer: %v\n%s", err, out)
		}
		what := tc.spoil(t, dir)
		out, err := cli(t, "ledger", "check", "--config", nd.Config)
		if err == nil {
			t.Fatalf("ledger check of the damaged peer succeeded:\n%s", out)
		}
		t.Logf("ledger check: %v\n%s", err, out)
		logSize := fileSize(n.lay.LogFile(peer))
		target := n.maxHeight(n.orderers()...)
		start := time.Now()
		n.restart(t)
		n.awaitHeight(t, peer, target, 30*time.Second)
		t.Logf("%s (%s): %s serves at height %d %v after net up began", tc.name, what, peer, target, time.Since(start).Round(time.Millisecond))
		if log := logRepairLines(t, n.lay.LogFile(peer), logSize); !strings.Contains(log, tc.want) {
			t.Fatalf("%s: the peer's log does not say %q", tc.name, tc.want)
		}
		if m := scrapeGauges(nd.Metrics, "strand_repair_state_rebuilds_total", "strand_repair_fetched_total", "strand_blockstore_damaged"); m["strand_blockstore_damaged"] != "0" {
			t.Fatalf("%s: metrics after the repair: %v", tc.name, m)
		} else {
			t.Logf("metrics after the repair: %v", m)
		}
		l, done := n.load(2 * time.Second)
		<-done
		loads = append(loads, l)
		n.settle(t, loads...)
	}

	// An orderer with a flipped byte in a block replaces it with a copy
	// from the other orderers (net verify reads every orderer's chain).
	ord := n.orderers()[1]
	nd, _ := n.lay.Node(ord)
	if err := syscall.Kill(n.pids[ord], syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	netWaitGone(t, n.pids[ord])
	fr := frames(t, filepath.Join(n.lay.Dir, "data", ord, "blocks"))
	f := fr[len(fr)/2]
	flipByte(t, f.path, f.off+f.size/2)
	logSize := fileSize(n.lay.LogFile(ord))
	start := time.Now()
	n.restart(t)
	for {
		m := scrapeGauges(nd.Metrics, "strand_blockstore_damaged", "strand_blockstore_replaced_total")
		if m["strand_blockstore_damaged"] == "0" && m["strand_blockstore_replaced_total"] == "1" {
			t.Logf("orderer %s: block %d of %d replaced %v after net up began (%v)", ord, f.num, len(fr), time.Since(start).Round(time.Millisecond), m)
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("orderer %s: not repaired after 30 s: %v", ord, m)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if log := logRepairLines(t, n.lay.LogFile(ord), logSize); !strings.Contains(log, "replaced every damaged block") {
		t.Fatalf("orderer %s: the log does not say it replaced the damaged block", ord)
	}
	l, done = n.load(2 * time.Second)
	<-done
	n.settle(t, append(loads, l)...)
}

// peers returns the names of the network's peers.
func (n *raftNet) peers() []string {
	var out []string
	for _, nd := range n.lay.Nodes {
		if nd.Role.String() == "peer" {
			out = append(out, nd.Name)
		}
	}
	return out
}

// frameLoc is one block's frame in a stopped node's segment files.
type frameLoc struct {
	path      string
	off, size int64
	num       uint64
}

// frames walks the frames of the segment files under a block store
// directory (u32 length | u32 CRC | u64 block number | block).
func frames(t *testing.T, dir string) []frameLoc {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "blocks", "*.seg"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segments in %s: %v", dir, err)
	}
	var out []frameLoc
	for _, p := range segs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off+16 <= int64(len(b)); {
			size := 8 + int64(binary.LittleEndian.Uint32(b[off:]))
			out = append(out, frameLoc{p, off, size, binary.LittleEndian.Uint64(b[off+8:])})
			off += size
		}
	}
	return out
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x20
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logRepairLines logs what the node wrote about damage and repair since
// offset from, and returns all it wrote since.
func logRepairLines(t *testing.T, path string, from int64) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b[min(from, int64(len(b))):])
	for _, line := range strings.Split(log, "\n") {
		for _, w := range []string{"damaged", "repair", "rebuild", "torn", "quarantine", "ahead", "re-applying", "peer started"} {
			if strings.Contains(line, w) {
				t.Log(line)
				break
			}
		}
	}
	return log
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
