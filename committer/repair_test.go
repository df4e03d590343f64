package committer

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
)

// TestRepairRestoresCodes damages the stored frame of a block whose codes
// depend on state and on the chain (an MVCC conflict inside the block, a
// duplicate of an earlier tx id, a bad signature; a later block reuses
// one of its tx ids), with the block index kept and deleted. Repair, given
// the orderer's copy (which carries no codes) and an empty state, must
// store the same codes the block had, and reach the same state, without
// applying any write twice; a forged copy is refused, and the next
// attempt resumes from the state the refused one left.
func TestRepairRestoresCodes(t *testing.T) {
	for _, dropIndex := range []bool{false, true} {
		n := newTestNet(t)
		dir := t.TempDir()
		p := openPeer(t, n, dir, Options{})
		setup := n.tx(rwset(testContract, nil, wr("a", "1"), wr("b", "1")))
		deliver(t, p, n.block(setup))
		tampered := retag(t, n.tx(rwset(testContract, nil, wr("x", "1"))), func(tx *api.Transaction) { tx.Signature[len(tx.Signature)-3] ^= 1 })
		writeD := n.tx(rwset(testContract, nil, wr("d", "1")))
		orderers := n.block(
			n.tx(rwset(testContract, reads(rd("a", ver(0, 0))), wr("a", "2"))),
			n.tx(rwset(testContract, reads(rd("a", ver(0, 0))), wr("y", "1"))), // MVCC_READ_CONFLICT: tx 0 wrote a
			setup,    // DUPLICATE_TXID of block 0
			tampered, // BAD_CREATOR_SIGNATURE
			writeD,
		)
		deliver(t, p, orderers)
		deliver(t, p, n.block(writeD, n.tx(rwset(testContract, reads(rd("a", ver(1, 0))), wr("a", "3")))))
		if err := p.Sync(); err != nil {
			t.Fatal(err)
		}
		want := storedCodes(t, p.store, 1)
		t.Logf("block 1 codes: %v", want)
		wantState := dumpState(t, p.db, testContract)
		raw0, _ := p.store.RawBlock(0)
		p.close()

		seg := filepath.Join(dir, "blocks", "blocks", "000000.seg")
		b, _ := os.ReadFile(seg)
		b[16+len(raw0)+40] ^= 0x10 // inside block 1's frame
		os.WriteFile(seg, b, 0o644)
		if dropIndex {
			os.RemoveAll(filepath.Join(dir, "blocks", "index"))
		}
		os.RemoveAll(filepath.Join(dir, "state")) // the node rebuilds the state (node.openState)
		store, db := reopenRaw(t, dir)
		if d := store.Damaged(); len(d) != 1 || d[0].Block != 1 {
			t.Fatalf("damaged %v, want block 1", d)
		}
		forged := decodeBlock(t, orderers)
		forged.Transactions[4] = n.tx(rwset(testContract, nil, wr("d", "forged")))
		err := Repair(n.ch, store, db, map[uint64][]byte{1: mustMarshal(t, forged)}, nil)
		if !errors.Is(err, ErrBlockRefused) || len(store.Damaged()) != 1 {
			t.Fatalf("Repair with a forged copy = %v, damaged %v; want ErrBlockRefused, block 1 still damaged", err, store.Damaged())
		}
		// The refused attempt stopped where a crash between the replay
		// and the replacement would: the state at the damaged block. The
		// next attempt resumes from there.
		if sp, err := db.Savepoint(); err != nil || sp != 1 {
			t.Fatalf("savepoint after the refused Repair = %d, %v; want 1", sp, err)
		}
		if err := Repair(n.ch, store, db, map[uint64][]byte{1: orderers}, nil); err != nil {
			t.Fatalf("index deleted %v: Repair: %v", dropIndex, err)
		}
		if got := storedCodes(t, store, 1); string(got) != string(want) {
			t.Errorf("index deleted %v: repaired codes %v, want %v", dropIndex, got, want)
		}
		if got := dumpState(t, db, testContract); !equalMaps(got, wantState) {
			t.Errorf("index deleted %v: state %v, want %v", dropIndex, got, wantState)
		}
		if err := store.VerifyChain(); err != nil {
			t.Errorf("index deleted %v: VerifyChain after repair: %v", dropIndex, err)
		}
		store.Close()
		db.Close()
		p = openPeer(t, n, dir, Options{}) // reopens over the repaired store and goes on
		sub := p.Subscribe(1)
		deliver(t, p, n.block(writeD))
		if ev := <-sub.C; api.TxValidationCode(ev.Codes[0]) != api.TxValidationCode_DUPLICATE_TXID {
			t.Errorf("index deleted %v: tx id of the repaired block reused: %v, want DUPLICATE_TXID", dropIndex, api.TxValidationCode(ev.Codes[0]))
		}
		p.close()
	}
}

func storedCodes(t *testing.T, s *ledger.BlockStore, n uint64) []byte {
	t.Helper()
	b, err := s.Block(n)
	if err != nil {
		t.Fatal(err)
	}
	return b.GetMetadata().GetValidationCodes()
}
