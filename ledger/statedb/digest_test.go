package statedb_test

import (
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
)

// TestDigest: two databases given the same batches have one digest; a
// different value, version or key boundary gives another.
func TestDigest(t *testing.T) {
	digest := func(puts ...[3]string) [32]byte {
		db := memdb.New()
		var b statedb.Batch
		for i, p := range puts {
			b.Put(p[0], p[1], []byte(p[2]), statedb.Version{Block: 1, Tx: uint32(i)})
		}
		if err := db.Apply(&b, 2, false); err != nil {
			t.Fatal(err)
		}
		sp, keys, sum, err := statedb.Digest(db)
		if err != nil || sp != 2 || keys != len(puts) {
			t.Fatalf("Digest = savepoint %d, %d keys, %v; want 2, %d", sp, keys, err, len(puts))
		}
		return sum
	}
	base := digest([3]string{"ns", "a", "1"}, [3]string{"ns", "b", "2"})
	if again := digest([3]string{"ns", "a", "1"}, [3]string{"ns", "b", "2"}); again != base {
		t.Fatal("the same state gave two digests")
	}
	for name, other := range map[string][32]byte{
		"value":    digest([3]string{"ns", "a", "1"}, [3]string{"ns", "b", "3"}),
		"version":  digest([3]string{"ns", "b", "2"}, [3]string{"ns", "a", "1"}),
		"boundary": digest([3]string{"ns", "a", "12"}, [3]string{"ns", "b", ""}),
	} {
		if other == base {
			t.Errorf("a different %s gave the same digest", name)
		}
	}
}
