package orderer

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// TestRaftRecreatesLostBlocks: a Raft member appends blocks without
// fsync. A machine crash can then cut blocks off its block store's tail;
// simulate one by truncating the member's last segment, and check that on
// restart it applies those log entries again, to the same chain as the
// others.
func TestRaftRecreatesLostBlocks(t *testing.T) {
	cl := newCluster(t, 3, raftBlock, nil)
	lead := cl.leader()
	want := cl.submitN(40, "a", 0, 1, 2)
	cl.checkAll(want)
	f := (lead + 1) % 3
	if got := cl.members[f].store.Stats().Fsyncs; got > 1 {
		t.Errorf("a follower's block store made %d fsyncs for 40 transactions; a Raft member should make none but its genesis block's", got)
	}
	height := cl.members[f].store.Height()
	cl.stop(f, true)

	segs, err := filepath.Glob(filepath.Join(cl.members[f].dir, "blocks", "blocks", "*.seg"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segment files of member %d: %v", f, err)
	}
	sort.Strings(segs)
	last := segs[len(segs)-1]
	st, err := os.Stat(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(last, st.Size()*2/3); err != nil {
		t.Fatal(err)
	}

	cl.start(f)
	if r := cl.members[f].store.Stats().LastRepair; r.CutBytes == 0 {
		t.Fatalf("the truncated store was not repaired: %s", r)
	}
	t.Logf("cut %d bytes (%s); height %d before the crash", cl.members[f].store.Stats().LastRepair.CutBytes,
		cl.members[f].store.Stats().LastRepair.CutReason, height)
	cl.checkAll(want)
	for id := range cl.submitN(10, "b", f) {
		want[id] = true
	}
	cl.checkAll(want)
}
