package committer

import (
	"errors"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/api"
)

// TestGenesis: with a genesis document, block 0 must hold exactly it; it
// commits as one VALID transaction that writes nothing, and a ledger whose
// block 0 holds another channel's document is refused.
func TestGenesis(t *testing.T) {
	n := newTestNet(t)
	n.ch.Genesis = []byte(`{"Format":"test","Channel":"ch1"}`)
	dir := t.TempDir()
	p := openPeer(t, n, dir, Options{})
	sub := p.Subscribe(4)

	// Another channel's genesis block is refused whole.
	foreign, err := api.BuildBlock(0, nil, [][]byte{[]byte(`{"Channel":"other"}`)}, n.orderer)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Deliver(mustMarshal(t, foreign)); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	if p.Height() != 0 || p.Metrics().Refused != 1 {
		t.Fatalf("after a foreign genesis block: height %d, %d refused", p.Height(), p.Metrics().Refused)
	}
	n.next = 1 // a block that assumes block 0 was taken
	err = p.Deliver(n.block(n.tx(rwset(testContract, nil, wr("x", "1")))))
	if !errors.Is(err, ErrBlockRefused) || !strings.Contains(err.Error(), "different channel") || !strings.Contains(err.Error(), "resume delivery at block 0") {
		t.Fatalf("after a foreign genesis block: %v, want the refusal naming a different channel", err)
	}
	// Delivery resumes at block 0 with the right document.
	n.next, n.prevHash = 0, nil
	deliver(t, p, n.block(n.ch.Genesis))
	deliver(t, p, n.block(n.tx(rwset(testContract, nil, wr("a", "1")))))
	if ev := <-sub.C; ev.Number != 0 || len(ev.Codes) != 1 || api.TxValidationCode(ev.Codes[0]) != api.TxValidationCode_VALID {
		t.Fatalf("genesis commit event %+v", ev)
	}
	if got := dumpState(t, p.db, testContract); len(got) != 1 || got["kv/a"] != "1@1:0" {
		t.Fatalf("state %v: the genesis block must write nothing", got)
	}
	p.close()

	// Reopening the ledger as another channel fails, before and after a
	// state rebuild.
	n.ch.Genesis = []byte(`{"Channel":"other"}`)
	store, db := reopenRaw(t, dir)
	if _, err := New(n.ch, store, db, Options{}, nil); err == nil || !strings.Contains(err.Error(), "different channel") {
		t.Fatalf("New over another channel's ledger: %v", err)
	}
	store.Close()
	db.Close()
}
