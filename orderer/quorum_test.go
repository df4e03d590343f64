package orderer

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRaftReadyNamesMissingQuorum: a member is ready while the cluster
// has a leader; with two of three members stopped it can never elect one,
// and its refusal (Ready, and a submission's) says a majority of 2 is
// needed, that it reaches only itself and whom it does not reach, instead
// of "retry shortly".
func TestRaftReadyNamesMissingQuorum(t *testing.T) {
	cl := newCluster(t, 3, raftBlock, nil)
	cl.leader()
	for i, m := range cl.members {
		if err := m.o.Ready(); err != nil {
			t.Fatalf("orderer %d with a leader: Ready = %v, want nil", i+1, err)
		}
	}
	cl.stop(1, false)
	cl.stop(2, false)
	want := "a leader needs a majority, 2 of the 3 orderers, and this one reaches 1 (itself; not orderer2, orderer3): start the others"
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err = cl.members[0].o.Ready(); err != nil && strings.Contains(err.Error(), want) {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("orderer1 alone: Ready = %v, want ErrUnavailable containing %q", err, want)
	}
	t.Logf("Ready: %v", err)
	raw, _ := cl.n.tx(t, "alone")
	if err := cl.members[0].o.Submit(t.Context(), raw); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Submit to orderer1 alone: %v, want an error containing %q", err, want)
	}
}
