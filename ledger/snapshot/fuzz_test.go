package snapshot

import (
	"bytes"
	"errors"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// FuzzRead feeds the decoder arbitrary records behind a valid head and
// checksum (so that the fuzzer gets past the checksum), and also as a
// whole file. It must never panic, and anything it accepts must obey the
// format's rules and be written back identically by Writer.
func FuzzRead(f *testing.F) {
	h := header("ch", "g")
	f.Add(cat(h, stateRec("kv", "a", 1, "x"), txRec("t1", 1, api.TxValidationCode_VALID), endRec(2, 1, 1)))
	f.Add(cat(h, endRec(1, 0, 0)))
	f.Add(cat(h, stateRec("kv", "a", 1, ""), stateRec("kv", "a\x00", 1, "y"), stateRec("kw", "", 0, ""), endRec(3, 3, 0)))
	f.Add([]byte{tagHeader, 0x80})
	f.Fuzz(func(t *testing.T, body []byte) {
		ReadFrom(bytes.NewReader(body), int64(len(body)), "fuzz", Visitor{})
		file := seal(Version, body)
		var states []statedb.Write
		var txs []ledger.TxRecord
		info, err := ReadFrom(bytes.NewReader(file), int64(len(file)), "fuzz", Visitor{
			State: func(ns, key string, v statedb.Value) error {
				states = append(states, statedb.Write{Namespace: ns, Key: key, Value: v.Data, Version: v.Version})
				return nil
			},
			Tx: func(r ledger.TxRecord) error { txs = append(txs, r); return nil },
		})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not marked ErrCorrupt: %v", err)
			}
			return
		}
		var out bytes.Buffer
		w, err := NewWriter(&out, info.Channel, info.Genesis)
		if err != nil {
			t.Fatalf("accepted header refused by Writer: %v", err)
		}
		for _, s := range states {
			if err := w.State(s.Namespace, s.Key, statedb.Value{Data: s.Value, Version: s.Version}); err != nil {
				t.Fatalf("accepted state refused by Writer: %v", err)
			}
		}
		for _, r := range txs {
			if err := w.Tx(r); err != nil {
				t.Fatalf("accepted tx refused by Writer: %v", err)
			}
		}
		if _, err := w.Finish(info.Height, info.PrevHash); err != nil {
			t.Fatalf("accepted end refused by Writer: %v", err)
		}
		if uint64(len(states)) != info.States || uint64(len(txs)) != info.TxIDs {
			t.Fatalf("visited %d keys and %d ids, info says %d and %d", len(states), len(txs), info.States, info.TxIDs)
		}
		if !bytes.Equal(out.Bytes(), file) {
			t.Fatalf("re-encoding differs:\n%x\n%x", out.Bytes(), file)
		}
	})
}
