package committer

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/snapshot"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
)

// TestFromSnapshot starts a committer on a ledger loaded from a snapshot
// of another peer's: it continues the chain from the snapshot's height
// (refusing a block that does not link to the snapshot's last hash),
// marks a tx id from before the snapshot DUPLICATE_TXID, ends with the
// same state as the source, and still checks the channel when reopened.
func TestFromSnapshot(t *testing.T) {
	n := newTestNet(t)
	n.ch.Genesis = []byte(`{"Format":"test","Channel":"ch1"}`)
	a := openPeer(t, n, t.TempDir(), Options{})
	deliver(t, a, n.block(n.ch.Genesis))
	old := n.tx(rwset(testContract, nil, wr("a", "1")))
	deliver(t, a, n.block(old, n.tx(rwset(testContract, nil, wr("b", "1")))))
	deliver(t, a, n.block(n.tx(rwset(testContract, nil, wr("a", "2"), del("b")))))

	path := filepath.Join(t.TempDir(), "snap")
	info, err := snapshot.Export(path, snapshot.Source{Channel: testChannel, Store: a.store, State: a.db})
	if err != nil {
		t.Fatal(err)
	}
	dirB := t.TempDir()
	db, err := pebbledb.Open(filepath.Join(dirB, "state"), pebbledb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Load(path, snapshot.Target{StoreDir: filepath.Join(dirB, "blocks"), State: db}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b := openPeer(t, n, dirB, Options{})
	if b.Height() != info.Height || info.Height != 3 {
		t.Fatalf("committer from a snapshot at height %d: height %d", info.Height, b.Height())
	}

	// A block 3 that does not link to block 2 is refused.
	next, prev := n.next, n.prevHash
	n.prevHash = make([]byte, api.HashSize)
	err = b.Deliver(n.block(n.tx(rwset(testContract, nil, wr("c", "1")))))
	if !errors.Is(err, ErrBlockRefused) || !strings.Contains(err.Error(), "block 2's header hash") {
		t.Fatalf("a block 3 linking elsewhere: err = %v, want ErrBlockRefused naming block 2's hash", err)
	}
	n.next, n.prevHash = next, prev

	// The next block, with the old tx again, on both peers.
	blk := n.block(old, n.tx(rwset(testContract, nil, wr("c", "1"))))
	for _, p := range []*peer{a, b} {
		deliver(t, p, blk)
		stored, err := p.store.Block(3)
		if err != nil {
			t.Fatal(err)
		}
		codes := stored.Metadata.ValidationCodes
		if api.TxValidationCode(codes[0]) != api.TxValidationCode_DUPLICATE_TXID || api.TxValidationCode(codes[1]) != api.TxValidationCode_VALID {
			t.Fatalf("block 3 codes %v, want DUPLICATE_TXID, VALID", codes)
		}
	}
	if sa, sb := dumpState(t, a.db, testContract), dumpState(t, b.db, testContract); !equalMaps(sa, sb) {
		t.Fatalf("states differ: %v, %v", sa, sb)
	}
	b.close()

	// Reopened, it checks its channel against the snapshot's genesis block.
	n.ch.Genesis = []byte(`{"Channel":"other"}`)
	store, sdb := reopenRaw(t, dirB)
	defer store.Close()
	defer sdb.Close()
	if _, err := New(n.ch, store, sdb, Options{}, nil); err == nil || !strings.Contains(err.Error(), "different channel") {
		t.Fatalf("New over another channel's snapshot: %v", err)
	}
}

// TestStateBelowBase: a state behind a block store that starts at a
// snapshot cannot be brought up (the blocks are absent); New says so.
func TestStateBelowBase(t *testing.T) {
	n := newTestNet(t)
	dir := t.TempDir()
	err := ledger.CreateBase(filepath.Join(dir, "blocks"), ledger.Base{Height: 5, PrevHash: make([]byte, api.HashSize)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, db := reopenRaw(t, dir)
	defer store.Close()
	defer db.Close()
	_, err = New(n.ch, store, db, Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "below block 5") || errors.Is(err, ErrClosed) {
		t.Fatalf("New with an empty state over a store based at 5: %v", err)
	}
}
