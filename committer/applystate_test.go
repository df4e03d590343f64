package committer

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/badger"
)

// TestApplyStateSplits checks that a group of blocks whose state is over
// Badger's transaction limit (15% of a 1 MiB memtable, about 150 KiB) is
// applied in parts at block boundaries instead of failing the peer, and
// that a single block over the limit still fails with ErrBatchTooBig.
func TestApplyStateSplits(t *testing.T) {
	db, err := badger.Open(t.TempDir(), badger.Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// 7 blocks of 20 writes of 2 KiB (values under the value threshold
	// count whole): 280 KiB in all, 40 KiB a block.
	val := bytes.Repeat([]byte{7}, 2<<10)
	var writes []statedb.Write
	var ends []int
	for blk := range 7 {
		for i := range 20 {
			writes = append(writes, statedb.Write{Namespace: "cc", Key: fmt.Sprintf("k%d-%d", blk, i), Value: val,
				Version: statedb.Version{Block: uint64(blk + 1), Tx: uint32(i)}})
		}
		ends = append(ends, len(writes))
	}
	if err := db.Apply(&statedb.Batch{Writes: writes}, 8, false); !errors.Is(err, statedb.ErrBatchTooBig) {
		t.Fatalf("one Apply of 280 KiB: err = %v, want ErrBatchTooBig (else this test proves nothing)", err)
	}
	if err := applyState(db, writes, ends, 8, false); err != nil {
		t.Fatalf("applyState: %v", err)
	}
	if sp, _ := db.Savepoint(); sp != 8 {
		t.Errorf("savepoint %d, want 8", sp)
	}
	for _, w := range writes {
		v, ok, err := db.Get("cc", w.Key)
		if err != nil || !ok || v.Version != w.Version {
			t.Fatalf("%s after applyState: found %v, version %v, err %v; want version %v", w.Key, ok, v.Version, err, w.Version)
		}
	}

	// One block alone over the limit cannot be split.
	var big []statedb.Write
	for i := range 100 {
		big = append(big, statedb.Write{Namespace: "cc", Key: fmt.Sprintf("big%d", i), Value: val, Version: statedb.Version{Block: 8}})
	}
	err = applyState(db, big, []int{len(big)}, 9, false)
	if !errors.Is(err, statedb.ErrBatchTooBig) {
		t.Fatalf("applyState of one 200 KiB block: err = %v, want ErrBatchTooBig", err)
	}
	if sp, _ := db.Savepoint(); sp != 8 {
		t.Errorf("savepoint after the refused block %d, want 8", sp)
	}
}
