package endorser

import (
	"context"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract/lifecycle"
)

// TestDefinitionRead: an endorsed call of a contract with a definition
// reads the definition's record at the version it was given
// (SetDefinitions), nil for a genesis contract's absent record, in
// namespace lifecycle.Namespace after the contract's own; the version is
// the one installed, not the state's (the state holds no record here). A
// query reads none, and neither does a contract set with SetContracts.
func TestDefinitionRead(t *testing.T) {
	f := newFixture(t)
	e := f.e(t)
	defRead := func(rp *api.ResponsePayload) (*api.KVRead, int) {
		t.Helper()
		ns := rp.GetRwset().GetNamespaces()
		for i, n := range ns {
			if n.Namespace != lifecycle.Namespace {
				continue
			}
			if i != len(ns)-1 || len(n.Reads) != 1 || len(n.Writes) != 0 || len(n.RangeReads) != 0 {
				t.Fatalf("namespace %s of the read/write set: %v, want one read, last", lifecycle.Namespace, n)
			}
			return n.Reads[0], len(ns)
		}
		return nil, len(ns)
	}
	if r, _ := defRead(f.endorse(t, "do", "put", "k", "v")); r != nil {
		t.Fatalf("a contract set without a definition read %v, want no definition read", r)
	}

	at := &api.Version{Block: 9, Tx: 3}
	if err := e.SetDefinitions(f.config(f.peer1).Contracts, map[string]Definition{testNS: {Sequence: 2, At: at}, "other": {Sequence: 1}}); err != nil {
		t.Fatal(err)
	}
	r, n := defRead(f.endorse(t, "do", "put", "k", "v"))
	if r == nil || r.Key != lifecycle.DefKey(testNS) || r.Version.GetBlock() != 9 || r.Version.GetTx() != 3 || n != 2 {
		t.Fatalf("definition read %v of %d namespaces, want %s at block 9 tx 3 after the contract's namespace", r, n, lifecycle.DefKey(testNS))
	}
	// A call that touches no key still reads its definition.
	if r, n := defRead(f.endorse(t, "do")); r == nil || n != 1 {
		t.Fatalf("a call touching nothing: definition read %v of %d namespaces, want it alone", r, n)
	}

	p := proposal(t, f.client, testChannel, "other", "do", "get", "k")
	sp := sign(t, p, f.client)
	rp, err := e.Simulate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := defRead(rp); r == nil || r.Key != lifecycle.DefKey("other") || r.Version != nil {
		t.Fatalf("a genesis contract's definition read: %v, want %s absent (nil version)", r, lifecycle.DefKey("other"))
	}
	q, err := e.Evaluate(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := defRead(q); r != nil {
		t.Fatalf("a query read its definition: %v, want nothing ordered, nothing bound", r)
	}
}
