package orderer

import (
	"testing"
	"time"
)

// TestRaftQuiesce: an idle 3-orderer group goes quiet (no Raft message
// for many heartbeat intervals), wakes for a submission at a follower and
// orders it, goes quiet again, and notices its leader's crash without
// any submission: the survivors elect a new leader and order on.
func TestRaftQuiesce(t *testing.T) {
	cl := newCluster(t, 3, raftBlock, nil)
	cl.leader()
	want := cl.submitN(10, "a", 0, 1, 2)
	cl.checkAll(want)
	cl.awaitQuiesced(nil)

	sent := cl.messagesOut()
	time.Sleep(20 * 25 * time.Millisecond) // 20 ticks: 40 heartbeats and answers awake
	if now := cl.messagesOut(); now != sent {
		t.Fatalf("a quiesced group sent %d Raft messages in 20 ticks; want none", now-sent)
	}

	lead := cl.leader()
	follower := (lead + 1) % 3
	for id := range cl.submitN(5, "b", follower) {
		want[id] = true
	}
	cl.checkAll(want)
	cl.awaitQuiesced(nil)

	cl.stop(lead, true)
	next := cl.leader() // no submission: the broken streams woke the followers
	if next == lead {
		t.Fatalf("orderer %d still leads after its crash", lead+1)
	}
	live := cl.except(lead)
	for id := range cl.submitN(5, "c", live...) {
		want[id] = true
	}
	cl.checkAll(want)
	cl.awaitQuiesced(live)
	for _, i := range live {
		if q := cl.members[i].o.Metrics().Raft.Quiesces; q < 2 {
			t.Errorf("orderer %d quiesced %d times, want at least 2", i+1, q)
		}
	}
}

// awaitQuiesced waits until the members idx (nil: all) are quiesced.
func (c *cluster) awaitQuiesced(idx []int) {
	c.t.Helper()
	if idx == nil {
		for i := range c.members {
			idx = append(idx, i)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		quiet := true
		for _, i := range idx {
			quiet = quiet && c.members[i].o.Metrics().Raft.Quiesced
		}
		if quiet {
			return
		}
		if time.Now().After(deadline) {
			for _, i := range idx {
				c.t.Logf("orderer %d: %v", i+1, c.members[i].o.Metrics().Raft)
			}
			c.t.Fatal("the idle group did not quiesce within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// messagesOut sums the Raft messages the running members sent.
func (c *cluster) messagesOut() uint64 {
	var n uint64
	for _, m := range c.members {
		if m.o != nil {
			n += m.o.Metrics().Raft.MessagesOut
		}
	}
	return n
}
