package endorser

import (
	"context"
	"errors"
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
	if m := e.Metrics(); m.Proposals != 2 || m.Endorsed != 0 || m.Refused() != 1 {
		t.Fatalf("metrics after two evaluations: %+v", m)
	}
}
