package ledger

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpenSegment writes arbitrary bytes, cut at a fuzzed length, as the
// only segment of a store. Open must not panic and must leave a store
// that holds a valid chain, serves it, and continues it.
func FuzzOpenSegment(f *testing.F) {
	var c chain
	es := c.blocks(3, 2)
	var valid []byte
	for _, e := range es {
		valid = appendFrame(valid, e.Number, e.Raw)
	}
	f.Add(valid, uint32(len(valid)))
	f.Add(valid, uint32(len(valid)-1))
	f.Add(valid, uint32(40))
	f.Add([]byte{}, uint32(0))
	f.Add(append(valid, 0xde, 0xad, 0xbe, 0xef), uint32(1<<20))
	f.Add(append(append([]byte{}, valid...), make([]byte, 64)...), uint32(1<<20))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint32(16))
	f.Add(appendFrame(nil, 7, es[0].Raw), uint32(1<<20))
	f.Add(appendFrame(nil, 0, []byte("not a block")), uint32(1<<20))
	f.Add(appendFrame(appendFrame(nil, 0, es[0].Raw), 1, es[0].Raw), uint32(1<<20))
	f.Fuzz(func(t *testing.T, data []byte, cut uint32) {
		data = data[:int(cut)%(len(data)+1)]
		dir := t.TempDir()
		opts := Options{SegmentSize: 4096, NoSync: true}
		if err := os.MkdirAll(filepath.Join(dir, "blocks"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(segPath(dir, 0), data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := OpenBlockStore(dir, opts)
		if err != nil {
			t.Fatalf("OpenBlockStore on a single segment: %v", err)
		}
		h := s.Height()
		st := s.Stats()
		if fi, err := os.Stat(segPath(dir, 0)); err != nil || fi.Size() != st.Bytes {
			t.Fatalf("segment size %d, store says %d bytes (%v)", fi.Size(), st.Bytes, err)
		}
		if st.LastRepair.CutBytes != int64(len(data))-st.Bytes {
			t.Fatalf("repair %s, but %d of %d bytes kept", st.LastRepair, st.Bytes, len(data))
		}
		if err := s.VerifyChain(); err != nil {
			t.Fatalf("VerifyChain: %v", err)
		}
		if _, err := s.RawBlock(h); !errors.Is(err, ErrNotFound) {
			t.Fatalf("RawBlock(height) = %v, want ErrNotFound", err)
		}
		// Continue the chain from what survived.
		next := chain{next: h, prev: s.LastHash()}
		e := next.block(1, nil, nil)
		if err := s.Append([]Entry{e}); err != nil {
			t.Fatalf("Append(%d): %v", h, err)
		}
		s.Close()
		s = openStore(t, dir, opts)
		defer s.Close()
		if got := s.Height(); got != h+1 {
			t.Fatalf("reopened height %d, want %d", got, h+1)
		}
		if r := s.Stats().LastRepair; r.CutBytes != 0 || r.IndexRebuilt {
			t.Fatalf("second open repaired: %s", r)
		}
		if loc, ok, err := s.TxLocation(e.TxIDs[0]); err != nil || !ok || loc.Block != h {
			t.Fatalf("TxLocation(%q) = %+v, %v, %v", e.TxIDs[0], loc, ok, err)
		}
	})
}

// FuzzBaseFile feeds arbitrary bytes to the base file reader: open and,
// as an index rebuild does, every record. It must refuse with ErrCorrupt,
// never panic, and accept only what a BaseWriter would write.
func FuzzBaseFile(f *testing.F) {
	fx := newBaseFixture(f, 4, 3)
	dir := f.TempDir()
	if err := CreateBase(filepath.Join(dir, "seed"), fx.base, fx.txs); err != nil {
		f.Fatal(err)
	}
	seed, err := os.ReadFile(filepath.Join(dir, "seed", BaseFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:40])
	f.Fuzz(func(t *testing.T, data []byte) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, BaseFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		br, err := openBase(d)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open: error not marked ErrCorrupt: %v", err)
			}
			return
		}
		defer br.f.Close()
		var txs []TxRecord
		if err := br.eachTx(func(r TxRecord) error { txs = append(txs, r); return nil }); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("records: error not marked ErrCorrupt: %v", err)
			}
			return
		}
		again := filepath.Join(t.TempDir(), "again")
		if err := CreateBase(again, br.base, txs); err != nil {
			t.Fatalf("an accepted base file does not write back: %v", err)
		}
		back, err := os.ReadFile(filepath.Join(again, BaseFile))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, data) {
			t.Fatalf("accepted base file re-encodes differently:\n%x\n%x", data, back)
		}
	})
}
