package ledger

import (
	"fmt"
	"testing"

	"github.com/strand-ledger/strand/api"
)

func TestTxFilter(t *testing.T) {
	f := newTxFilter(0)
	const n = 5 * minFilterSize // grows through several parts
	for i := range n {
		f.add(fmt.Sprint("tx-", i))
	}
	if parts := len(*f.parts.Load()); parts < 3 {
		t.Fatalf("%d parts after %d ids, want growth", parts, n)
	}
	for i := range n {
		if id := fmt.Sprint("tx-", i); !f.mayHave(id) {
			t.Fatalf("false negative for %s", id)
		}
	}
	fp := 0
	for i := range 100000 {
		if f.mayHave(fmt.Sprint("other-", i)) {
			fp++
		}
	}
	// About 1% per part, a few parts.
	if rate := float64(fp) / 100000; rate > 0.05 {
		t.Fatalf("false positive rate %.3f, want under 0.05", rate)
	} else {
		t.Logf("false positive rate %.4f over %d parts", rate, len(*f.parts.Load()))
	}
}

// TestTxFilterAfterReopen: ids indexed before a reopen are still found
// (the filter is rebuilt from the index), and new ones are added.
func TestTxFilterAfterReopen(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{NoSync: true})
	var c chain
	es := c.blocks(4, 3)
	mustAppend(t, s, es)
	s.Close()
	s = openStore(t, dir, Options{NoSync: true})
	defer s.Close()
	more := c.blocks(2, 3)
	mustAppend(t, s, more)
	for _, e := range append(es, more...) {
		for i, id := range e.TxIDs {
			if id == "" || !api.TxIDCounts(api.TxValidationCode(e.Codes[i])) {
				continue // not indexed
			}
			loc, ok, err := s.TxLocation(id)
			if err != nil || !ok || loc.Block != e.Number || loc.Tx != uint32(i) {
				t.Fatalf("TxLocation(%s) = %+v, %v, %v; want block %d tx %d", id, loc, ok, err, e.Number, i)
			}
		}
	}
	if _, ok, _ := s.TxLocation("never"); ok {
		t.Fatal("an unknown id was found")
	}
}
