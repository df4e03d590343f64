package node

import (
	"log/slog"
	"testing"

	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
	"github.com/strand-ledger/strand/policy"
)

// TestComputeDefinitionsRead: a compute node reads the genesis contracts
// overlaid by the definitions in state; reading unchanged state again
// returns the installed table itself (nothing to install), and a new
// sequence a new table. Only a change to lifecycle.Namespace, or a
// resync, wakes it.
func TestComputeDefinitionsRead(t *testing.T) {
	db := memdb.New()
	height := uint64(0)
	define := func(name string, seq uint64) {
		t.Helper()
		d := &lifecycle.Definition{Channel: "ch", Name: name, Version: "1", Sequence: seq, Runtime: lifecycle.RuntimeBuiltin, Policy: "OR('Org1.peer')"}
		raw, err := d.Encode()
		if err != nil {
			t.Fatal(err)
		}
		height++
		var b statedb.Batch
		b.Put(lifecycle.Namespace, lifecycle.DefKey(name), raw, statedb.Version{Block: height})
		if err := db.Apply(&b, height, false); err != nil {
			t.Fatal(err)
		}
	}
	d := newComputeDefinitions(map[string]*policy.Policy{"kv": policy.MustParse("OR('Org1.peer')")}, slog.New(slog.DiscardHandler))
	d.state = db
	read := func() *lifecycle.Table {
		t.Helper()
		tb, err := d.read()
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	seqs := func(tb *lifecycle.Table) map[string]uint64 {
		m := map[string]uint64{}
		for _, n := range tb.Names() {
			e, _ := tb.Get(n)
			m[n] = e.Sequence
		}
		return m
	}
	define("kvw", 1)
	first := read()
	if s := seqs(first); len(s) != 2 || s["kv"] != 1 || s["kvw"] != 1 {
		t.Fatalf("read %v; want kv (genesis) and kvw at sequence 1", s)
	}
	d.table.Store(first)
	if again := read(); again != first {
		t.Fatalf("reading unchanged definitions gave a new table")
	}
	define("kvw", 2)
	if s := seqs(read()); s["kvw"] != 2 {
		t.Fatalf("after an upgrade read %v; want kvw at sequence 2", s)
	}
	// Endorsed calls read the record at the version the definition was
	// read at (lifecycle.Bind): the record's own.
	if e, _ := read().Get("kvw"); e.Def.At == nil || e.Def.At.Block != 2 || e.Def.At.Tx != 0 {
		t.Fatalf("kvw's upgrade read at version %v, want block 2 tx 0, its record's", e.Def.At)
	}

	for _, tc := range []struct {
		ns   []string
		kick bool
	}{{[]string{"kv", "smallbank"}, false}, {[]string{}, false}, {[]string{"kv", lifecycle.Namespace}, true}, {nil, true}} {
		d.changed(7, tc.ns)
		select {
		case <-d.kick:
			if !tc.kick {
				t.Errorf("a change of %v woke the reader", tc.ns)
			}
		default:
			if tc.kick {
				t.Errorf("a change of %v did not wake the reader", tc.ns)
			}
		}
	}
}
