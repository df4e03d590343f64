package endorser

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestEvaluate: a query gets the same checks and simulation as an
// endorsement, and nothing is signed.
func TestEvaluate(t *testing.T) {
	f := newFixture(t)
	e := f.e(t)
	sp := sign(t, proposal(t, f.client, testChannel, testNS, "whoami"), f.client)
	rp, err := e.Evaluate(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	if len(rp.Result) == 0 || rp.Rwset == nil {
		t.Fatalf("Evaluate = %v, want the simulation's result and read/write set", rp)
	}
	forged := sign(t, proposal(t, f.client, testChannel, testNS, "whoami"), f.peer1)
	if _, err := e.Evaluate(context.Background(), forged); !errors.Is(err, ErrBadSignature) || StatusOf(err) != 403 {
		t.Fatalf("Evaluate of a proposal signed by someone else: %v (status %d), want ErrBadSignature 403", err, StatusOf(err))
	}
	// A query whose simulation writes (or deletes) is refused, naming the
	// function and a key: its writes would be lost.
	for _, args := range [][]string{{"get", "a", "put", "k1", "v", "put", "k2", "v"}, {"del", "k3"}} {
		sp := sign(t, proposal(t, f.client, testChannel, testNS, "do", args...), f.client)
		_, err := e.Evaluate(context.Background(), sp)
		if !errors.Is(err, ErrQueryWrites) || StatusOf(err) != 400 || !strings.Contains(err.Error(), testNS+".do writes") ||
			!strings.Contains(err.Error(), "submit it as a transaction") {
			t.Fatalf("Evaluate of do %v: %v (status %d), want ErrQueryWrites 400 naming the function and what to do", args, err, StatusOf(err))
		}
	}
	if m := e.Metrics(); m.Proposals != 4 || m.Endorsed != 0 || m.Refused() != 3 || m.QueryWrites != 2 {
		t.Fatalf("metrics after four evaluations: %+v", m)
	}
}
