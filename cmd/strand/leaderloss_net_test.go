package main

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestNetRaftLeaderLossGap SIGKILLs the Raft leader of a 3-orderer cluster
// under a closed-loop Smallbank load (16 clients, each waiting up to 10 s
// for its transaction) and measures how long the clients go without
// hearing of a commit. Blocks are cut 200 ms after their first
// transaction (block mode), and the clients, answered together by each
// block, submit their next transactions together: the leader is killed
// 100 ms after it appended a block, when nearly every client has a
// transaction waiting in its cutter, admitted and never to be ordered. The gateways notice their
// absence and submit them again (gateway/resubmit.go), so a client sees
// the election, not its 10 s deadline. The bounds asserted are the
// clients' timeout less room for a busy machine (8 s), not performance
// targets: without resubmission a client whose transaction was lost waits
// its whole 10 s. Then the settle checks that every acknowledged
// transaction is on both peers with the block and code its client heard
// (a resubmitted copy is DUPLICATE_TXID and never answers for the first).
func TestNetRaftLeaderLossGap(t *testing.T) {
	n := startRaftNet(t, localnet.Spec{Orderers: 3, Batch: node.BatchConfig{MaxTxs: 100, Timeout: 200 * time.Millisecond}})
	const loadFor = 11 * time.Second // past the clients' 10 s deadline after the kill
	started := time.Now()
	l, loadDone := n.load(loadFor)
	time.Sleep(1500 * time.Millisecond)
	leader, id := raftLeader(t, n.lay, "")
	for h := n.height(leader); n.height(leader) == h; {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	n.kill(t, leader)
	killed := time.Now()
	<-loadDone
	gap, from := l.longestGap(started, started.Add(loadFor))
	t.Logf("killed leader %s (raft id %s) %v into the load; longest time without an acknowledged commit: %v, from %v after the kill; longest wait of one client for one transaction: %v; resubmitted by the gateways: %s",
		leader, id, killed.Sub(started).Round(time.Millisecond), gap.Round(time.Millisecond), from.Sub(killed).Round(time.Millisecond),
		l.longest.Round(time.Millisecond), n.resubmitted())
	if gap >= 8*time.Second {
		t.Errorf("no client heard of a commit for %v after the leader was killed: the clients waited out their deadline", gap.Round(time.Millisecond))
	}
	if l.longest >= 8*time.Second {
		t.Errorf("a client waited %v for one transaction: its transaction was lost with the leader and never submitted again", l.longest.Round(time.Millisecond))
	}
	n.restart(t)
	n.settle(t, l)
}

// longestGap returns the longest time between two acknowledgements of
// the load, counting from start and up to end, and when it began.
func (l *ledgerLoad) longestGap(start, end time.Time) (time.Duration, time.Time) {
	times := []time.Time{start, end}
	for _, a := range l.acked {
		times = append(times, a.at)
	}
	slices.SortFunc(times, time.Time.Compare)
	var gap time.Duration
	var from time.Time
	for i := 1; i < len(times) && !times[i-1].After(end); i++ {
		next := times[i]
		if next.After(end) {
			next = end
		}
		if d := next.Sub(times[i-1]); d > gap {
			gap, from = d, times[i-1]
		}
	}
	return gap, from
}

// resubmitted is what every peer's gateway reports it resubmitted.
func (n *raftNet) resubmitted() string {
	out := ""
	for _, nd := range n.lay.Nodes {
		if nd.Role.String() == "peer" {
			v := scrapeGauges(nd.Metrics, "strand_gateway_resubmitted_total")["strand_gateway_resubmitted_total"]
			if _, err := strconv.Atoi(v); err != nil {
				v = "?"
			}
			out += nd.Name + " " + v + " "
		}
	}
	return out
}
