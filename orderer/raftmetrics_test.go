package orderer

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// leaderLine finds a "raft leader changed" log line of member i that
// matches all of parts, waiting up to 10 s for it.
func (c *cluster) leaderLine(i int, parts ...string) string {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, line := range strings.Split(c.members[i].logs.String(), "\n") {
			if !strings.Contains(line, "raft leader changed") {
				continue
			}
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return line
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("orderer %d logged no leader change with %q within 10 s:\n%s", c.members[i].id, parts, c.members[i].logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRaftLeaderChangeLogsAndMetrics: a crashed leader's successor logs
// the old leader, itself, the new term and the cause (election
// timeout); the metrics report leader, term, commit and applied index
// and hold proposal and log-fsync latency distributions.
func TestRaftLeaderChangeLogsAndMetrics(t *testing.T) {
	cl := newCluster(t, 3, raftBlock, nil)
	old := cl.leader()
	cl.checkAll(cl.submitN(20, "a", 0, 1, 2))
	m := cl.members[old].o.Metrics().Raft
	if m.Leader != uint64(old+1) || m.Term == 0 || m.Commit == 0 || m.Applied == 0 {
		t.Errorf("leader's metrics: leader %d term %d commit %d applied %d, want leader %d and the rest set", m.Leader, m.Term, m.Commit, m.Applied, old+1)
	}
	if m.Proposal.Count == 0 || m.Proposal.Count != m.ProposalsApplied || m.Proposal.Sum != m.ProposalLatency {
		t.Errorf("proposal histogram %v disagrees with %d applied proposals taking %s", m.Proposal, m.ProposalsApplied, m.ProposalLatency)
	}
	if m.WAL.Fsync.Count == 0 || m.WAL.Fsync.Count != m.WAL.Fsyncs {
		t.Errorf("log fsync histogram %v disagrees with %d fsyncs", m.WAL.Fsync, m.WAL.Fsyncs)
	}

	cl.stop(old, true)
	lead := cl.leader()
	term := cl.members[lead].o.Metrics().Raft.Term
	line := cl.leaderLine(lead, "state=StateLeader", fmt.Sprintf("previous=%d", old+1), fmt.Sprintf("leader=%d", lead+1), fmt.Sprintf("term=%d", term))
	if !strings.Contains(line, "election timeout") {
		t.Errorf("the new leader's log line gives no election timeout as the cause:\n%s", line)
	}
	if got := cl.members[lead].o.Metrics().Raft.LeaderChanges; got < 2 {
		t.Errorf("LeaderChanges = %d, want at least 2 (the first leader, then the successor)", got)
	}
}

// TestRaftCheckQuorumLogged: a leader whose followers are gone steps
// down by check-quorum and says so.
func TestRaftCheckQuorumLogged(t *testing.T) {
	cl := newCluster(t, 3, raftBlock, nil)
	lead := cl.leader()
	for i := range cl.members {
		if i != lead {
			cl.stop(i, false)
		}
	}
	line := cl.leaderLine(lead, "leader=0", fmt.Sprintf("previous=%d", lead+1))
	if !regexp.MustCompile(`why="check-quorum`).MatchString(line) {
		t.Errorf("the deposed leader does not name check-quorum as the cause:\n%s", line)
	}
}
