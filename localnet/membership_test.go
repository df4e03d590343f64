package localnet

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestMembershipNext: a member that a later set lacks is removed; one
// named again is a member, no longer removed; the first record starts
// from the channel file's set.
func TestMembershipNext(t *testing.T) {
	var m *Membership
	got := m.next([]string{"o0", "o1", "o2"}, 1, []string{"o0", "o1", "o2", "o3"})
	if !reflect.DeepEqual(got, Membership{Sequence: 1, Orderers: []string{"o0", "o1", "o2", "o3"}}) {
		t.Fatalf("add: %+v", got)
	}
	got = got.next(nil, 2, []string{"o1", "o2", "o3"})
	got = got.next(nil, 3, []string{"o2", "o3"})
	if !reflect.DeepEqual(got, Membership{Sequence: 3, Orderers: []string{"o2", "o3"}, Removed: []string{"o0", "o1"}}) {
		t.Fatalf("two removals: %+v", got)
	}
	got = got.next(nil, 4, []string{"o2", "o3", "o0"})
	if !reflect.DeepEqual(got, Membership{Sequence: 4, Orderers: []string{"o2", "o3", "o0"}, Removed: []string{"o1"}}) {
		t.Fatalf("re-added: %+v", got)
	}
	// The first record after the channel file's set removes one.
	got = m.next([]string{"o0", "o1", "o2"}, 1, []string{"o1", "o2"})
	if !reflect.DeepEqual(got.Removed, []string{"o0"}) {
		t.Fatalf("first record: %+v", got)
	}
}

// TestRecordOrderers: after a recorded removal of orderer0, the default
// orderer is a current member, orderer0 is refused naming it as removed
// and a current member, the record survives Load, an older sequence does
// not overwrite it, Up does not start orderer0 and Status marks it.
func TestRecordOrderers(t *testing.T) {
	dir := t.TempDir()
	lay, err := Generate(dir, Spec{Orderers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := lay.Orderer(""); err != nil || n.Name != "orderer0" {
		t.Fatalf("default orderer before any update: %v, %v", n.Name, err)
	}
	if lay.Removed("orderer0") {
		t.Fatal("orderer0 removed before any update")
	}
	// A single-node orderer's config has no orderer set: nothing recorded.
	if err := lay.RecordOrderers(0, nil); err != nil || lay.Membership != nil || lay.Removed("orderer0") {
		t.Fatalf("recording an empty set: %+v, %v", lay.Membership, err)
	}
	if err := lay.RecordOrderers(2, []string{"orderer1", "orderer2"}); err != nil {
		t.Fatal(err)
	}
	lay, err = Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !lay.Removed("orderer0") || lay.Removed("orderer1") {
		t.Fatalf("after removing orderer0: membership %+v", lay.Membership)
	}
	if n, err := lay.Orderer(""); err != nil || n.Name != "orderer1" {
		t.Fatalf("default orderer after removing orderer0: %v, %v", n.Name, err)
	}
	_, err = lay.Orderer("orderer0")
	if err == nil || !strings.Contains(err.Error(), "orderer0 was removed") || !strings.Contains(err.Error(), "use --at orderer1") {
		t.Fatalf("Orderer(orderer0): %v", err)
	}
	t.Log(err)
	if _, err := lay.Orderer("peer0"); err == nil {
		t.Fatal("Orderer(peer0) succeeded")
	}
	// A stale record (an older sequence) does not overwrite a newer one.
	if err := lay.RecordOrderers(1, []string{"orderer0", "orderer1", "orderer2"}); err != nil {
		t.Fatal(err)
	}
	if lay, err = Load(dir); err != nil || !lay.Removed("orderer0") {
		t.Fatalf("after a stale record: %+v, %v", lay.Membership, err)
	}

	// Up skips the removed orderer: with only it in the layout, Up
	// starts nothing (a start of /bin/false would fail to be reachable).
	only := *lay
	o0, _ := lay.Node("orderer0")
	only.Nodes = []Node{o0}
	procs, err := Up(&only, UpOptions{Command: []string{"/bin/false"}, Wait: 2 * time.Second})
	if err != nil {
		t.Fatalf("Up of a removed orderer: %v", err)
	}
	if len(procs) != 1 || !procs[0].Removed || procs[0].Started || procs[0].PID != 0 {
		t.Fatalf("Up of a removed orderer: %+v", procs)
	}
	for _, p := range Status(lay) {
		if p.Removed != (p.Name == "orderer0") {
			t.Errorf("Status: %s Removed=%v", p.Name, p.Removed)
		}
	}
}

// TestSettledSkipsRemoved: a removed orderer's chain (height 0, not
// read) neither fails nor sets the height the others must reach.
func TestSettledSkipsRemoved(t *testing.T) {
	chains := []Chain{
		{Node: Node{Name: "orderer0"}, Removed: true, Height: 9},
		{Node: Node{Name: "orderer1"}, Height: 5},
		{Node: Node{Name: "peer0"}, Height: 5},
	}
	if err := settled(chains); err != nil {
		t.Fatalf("settled: %v", err)
	}
	chains[0].Removed = false
	if err := settled(chains); err == nil {
		t.Fatal("settled with a higher orderer that is not removed")
	}
}
