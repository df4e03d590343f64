package orderer

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/strand-ledger/strand/orderer/cut"
)

// TestGenesis: an orderer with a genesis document writes it as block 0 on
// an empty store, numbers its first cut block 1, accepts the same document
// on restart and refuses another channel's.
func TestGenesis(t *testing.T) {
	n := newTestNet(t)
	dir := t.TempDir()
	doc := []byte(`{"Format":"test","Channel":"` + testChannel + `"}`)
	batch := cut.Config{MaxTxs: 1, MaxBytes: 1 << 20, Timeout: time.Second}

	store := openStore(t, dir)
	cfg := n.config(store, batch)
	cfg.Genesis = doc
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := n.tx(t, "k")
	if err := o.Submit(t.Context(), tx); err != nil {
		t.Fatal(err)
	}
	got := blocks(t, o, 0, 2)
	if len(got[0].Transactions) != 1 || !bytes.Equal(got[0].Transactions[0], doc) || got[0].Header.PreviousHash != nil {
		t.Fatalf("block 0 = %v, want the genesis document alone", got[0])
	}
	if got[1].Header.Number != 1 || !bytes.Equal(got[1].Transactions[0], tx) {
		t.Fatalf("block 1 = %v, want the submitted transaction", got[1])
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	store.Close()

	store = openStore(t, dir)
	defer store.Close()
	cfg = n.config(store, batch)
	cfg.Genesis = doc
	o, err = New(cfg)
	if err != nil {
		t.Fatalf("restart with the same genesis: %v", err)
	}
	o.Close()
	cfg.Genesis = []byte(`{"Channel":"other"}`)
	if _, err := New(cfg); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("restart with another channel's genesis: %v, want ErrBadConfig", err)
	}
}
