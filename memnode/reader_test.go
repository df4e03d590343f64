package memnode_test

import (
	"errors"
	"testing"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode/memnodetest"
)

// TestReadHeight: a client that only reads (a compute node) learns the
// node's height from its read answers; when the node restarts below the
// height it read, its next read fails with ErrStateLost and Savepoint
// starts it over at the node's height.
func TestReadHeight(t *testing.T) {
	tl, err := memnodetest.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	n, err := memnodetest.Start(tl, t.TempDir(), tiered.Options{FlushBlocks: 1000, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Close() }()
	w, err := n.Dial(0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := n.Dial(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for h := uint64(1); h <= 3; h++ {
		var b statedb.Batch
		b.Put("ns", "k", []byte{byte(h)}, statedb.Version{Block: h - 1})
		if err := w.Apply(&b, h, false); err != nil {
			t.Fatal(err)
		}
	}
	if h := r.ReadHeight(); h != 0 {
		t.Fatalf("reader's height before any read: %d, want 0 (the node's at Dial)", h)
	}
	if v, _, err := r.Get("ns", "k"); err != nil || v.Data[0] != 3 || r.ReadHeight() != 3 {
		t.Fatalf("read %v, %v at height %d; want the value of block 3 at height 3", v, err, r.ReadHeight())
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(); err != nil { // at its storage savepoint, 0: nothing was flushed
		t.Fatal(err)
	}
	// Reconnecting may first fail as unavailable; the loss shows once the
	// node answers.
	deadline := time.Now().Add(10 * time.Second)
	for _, _, err = r.Get("ns", "k"); errors.Is(err, statedb.ErrUnavailable) && time.Now().Before(deadline); _, _, err = r.Get("ns", "k") {
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(err, statedb.ErrStateLost) {
		t.Fatalf("read after the restart: %v; want ErrStateLost", err)
	}
	if sp, err := r.Savepoint(); err != nil || sp != 0 || r.ReadHeight() != 0 {
		t.Fatalf("Savepoint %d, %v; height %d; want the reader started over at 0", sp, err, r.ReadHeight())
	}
	if _, found, err := r.Get("ns", "k"); err != nil || found {
		t.Fatalf("read after starting over: found %v, %v; want the node's state (empty)", found, err)
	}
}
