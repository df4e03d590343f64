package ledger

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/api"
)

// baseFixture is a chain of blocks and a base cut from it at height h:
// the tx ids of blocks below h, as a snapshot would carry them.
type baseFixture struct {
	es   []Entry
	base Base
	txs  []TxRecord
}

func newBaseFixture(t testing.TB, n, h int) baseFixture {
	t.Helper()
	var c chain
	f := baseFixture{es: c.blocks(n, 4)}
	f.base = Base{Height: uint64(h), PrevHash: f.es[h-1].HeaderHash, Genesis: f.es[0].Raw}
	for _, e := range f.es[:h] {
		for j, id := range e.TxIDs {
			if id != "" && api.TxIDCounts(api.TxValidationCode(e.Codes[j])) {
				f.txs = append(f.txs, TxRecord{ID: id, Location: Location{Block: e.Number, Tx: uint32(j), Code: api.TxValidationCode(e.Codes[j])}})
			}
		}
	}
	return f
}

// checkBaseContents checks a store created at f.base that holds blocks up
// to height: blocks below the base are refused, the base's tx ids and the
// stored blocks' ids are found, and the chain verifies.
func checkBaseContents(t *testing.T, s *BlockStore, f baseFixture, height uint64) {
	t.Helper()
	if got := s.Height(); got != height {
		t.Fatalf("Height = %d, want %d", got, height)
	}
	if string(s.LastHash()) != string(f.es[height-1].HeaderHash) {
		t.Fatalf("LastHash = %x, want the header hash of block %d", s.LastHash(), height-1)
	}
	for n := uint64(0); n < f.base.Height; n++ {
		_, err := s.RawBlock(n)
		if !errors.Is(err, ErrBeforeBase) || !strings.Contains(err.Error(), "starts at block") {
			t.Fatalf("RawBlock(%d) below the base: err = %v, want ErrBeforeBase saying where the ledger starts", n, err)
		}
	}
	for n := f.base.Height; n < height; n++ {
		raw, err := s.RawBlock(n)
		if err != nil || string(raw) != string(f.es[n].Raw) {
			t.Fatalf("RawBlock(%d) = %d bytes, %v", n, len(raw), err)
		}
	}
	for _, e := range f.es {
		for j, id := range e.TxIDs {
			if id == "" {
				continue
			}
			loc, ok, err := s.TxLocation(id)
			if err != nil {
				t.Fatal(err)
			}
			want := Location{Block: e.Number, Tx: uint32(j)}
			if e.Number >= height {
				if ok {
					t.Fatalf("TxLocation(%q) of a block not stored = %+v", id, loc)
				}
				continue
			}
			if !ok || loc != want {
				t.Fatalf("TxLocation(%q) = %+v, %v; want %+v", id, loc, ok, want)
			}
		}
	}
	if err := s.VerifyChain(); err != nil {
		t.Fatalf("VerifyChain: %v", err)
	}
	if b := s.Base(); b.Height != f.base.Height || string(b.Genesis) != string(f.base.Genesis) {
		t.Fatalf("Base() = height %d, %d genesis bytes; want %d, %d", b.Height, len(b.Genesis), f.base.Height, len(f.base.Genesis))
	}
}

func TestBaseStore(t *testing.T) {
	f := newBaseFixture(t, 12, 6)
	dir := t.TempDir()
	if err := CreateBase(dir, f.base, f.txs); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, Options{NoSync: true})
	checkBaseContents(t, s, f, 6)
	it := s.Iterator(2)
	if _, _, err := it.Next(); !errors.Is(err, ErrBeforeBase) {
		t.Fatalf("Iterator(2).Next: err = %v, want ErrBeforeBase", err)
	}
	// The first block must continue from the base's hash.
	if err := s.Append(f.es[7:8]); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("Append(block 7) at base 6: err = %v, want ErrOutOfOrder", err)
	}
	other := f.es[6]
	other.PrevHash = f.es[4].HeaderHash
	if err := s.Append([]Entry{other}); !errors.Is(err, ErrChainBroken) {
		t.Fatalf("Append(block 6 naming block 4's hash): err = %v, want ErrChainBroken", err)
	}
	mustAppend(t, s, f.es[6:9])
	checkBaseContents(t, s, f, 9)
	var listed int
	if err := s.EachTx(7, func(tr TxRecord) error {
		if tr.Block >= 7 {
			t.Errorf("EachTx(7) listed %+v", tr)
		}
		listed++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := len(f.txs) + 3; listed != want { // block 6's three ids besides the base's
		t.Fatalf("EachTx(7) listed %d ids, want %d", listed, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened, and again with the index lost: the base's ids come back
	// from the base file.
	s = openStore(t, dir, Options{NoSync: true})
	checkBaseContents(t, s, f, 9)
	mustAppend(t, s, f.es[9:])
	s.Close()
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{NoSync: true})
	defer s.Close()
	if r := s.Stats().LastRepair; !r.IndexRebuilt {
		t.Fatalf("repair after losing the index: %s, want a rebuild", r)
	}
	checkBaseContents(t, s, f, 12)
}

// TestBaseEmpty opens a store that holds only its base, twice.
func TestBaseEmpty(t *testing.T) {
	f := newBaseFixture(t, 4, 4)
	dir := t.TempDir()
	if err := CreateBase(dir, f.base, f.txs); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s := openStore(t, dir, Options{NoSync: true})
		checkBaseContents(t, s, f, 4)
		if _, _, err := s.Iterator(4).Next(); err != io.EOF {
			t.Fatalf("Iterator(4).Next on an empty store: %v, want io.EOF", err)
		}
		s.Close()
	}
}

func TestCreateBaseRefuses(t *testing.T) {
	f := newBaseFixture(t, 4, 3)
	used := t.TempDir()
	openStore(t, used, Options{NoSync: true}).Close()
	for _, tc := range []struct {
		name string
		dir  string
		base Base
		txs  []TxRecord
		want string
	}{
		{"existing store", used, f.base, nil, "already holds a block store"},
		{"height 0", "", Base{PrevHash: f.base.PrevHash}, nil, "base height 0"},
		{"short hash", "", Base{Height: 3, PrevHash: []byte{1}}, nil, "previous hash is 1 bytes"},
		{"tx above base", "", f.base, []TxRecord{{ID: "x", Location: Location{Block: 3}}}, "not below the base height 3"},
		{"empty id", "", f.base, []TxRecord{{}}, "want 1 to"},
		{"duplicate code", "", f.base, []TxRecord{{ID: "x", Location: Location{Code: api.TxValidationCode_DUPLICATE_TXID}}}, "does not claim its id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir
			if dir == "" {
				dir = t.TempDir()
			}
			err := CreateBase(dir, tc.base, tc.txs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CreateBase: err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestBaseCorrupt damages the base file and checks that open refuses it,
// naming the file: the head at every open, the records when the index is
// rebuilt from them.
func TestBaseCorrupt(t *testing.T) {
	f := newBaseFixture(t, 6, 5)
	src := t.TempDir()
	if err := CreateBase(src, f.base, f.txs); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(src, BaseFile))
	if err != nil {
		t.Fatal(err)
	}
	headEnd := len(baseMagic) + 4 + 8 + api.HashSize + 4 + len(f.base.Genesis) + 8 + 4
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
		want   string
	}{
		{"magic", func(b []byte) []byte { b[0] ^= 1; return b }, "not a base file"},
		{"version", func(b []byte) []byte { b[len(baseMagic)] = 9; return b }, "format version 9"},
		{"height", func(b []byte) []byte { b[len(baseMagic)+4] ^= 1; return b }, "checksum mismatch in the header"},
		{"truncated head", func(b []byte) []byte { return b[:headEnd-2] }, "checksum of the header"},
		{"record", func(b []byte) []byte { b[headEnd+3] ^= 0x20; return b }, "tx records"},
		{"truncated records", func(b []byte) []byte { return b[:len(b)-5] }, "base file"},
		{"trailing bytes", func(b []byte) []byte { return append(b, 0) }, "bytes after the tx records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, BaseFile)
			if err := os.WriteFile(path, tc.damage(append([]byte(nil), data...)), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := OpenBlockStore(dir, Options{NoSync: true})
			if err == nil {
				s.Close()
				t.Fatal("OpenBlockStore of a damaged base file succeeded")
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrCorrupt naming %s and saying %q", err, path, tc.want)
			}
		})
	}
}

// TestBaseRecordLost: an index that lost the record of the base's ids
// (an unsynced write lost in a crash) is rebuilt from the base file and
// the segments.
func TestBaseRecordLost(t *testing.T) {
	f := newBaseFixture(t, 8, 3)
	dir := t.TempDir()
	if err := CreateBase(dir, f.base, f.txs); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, Options{NoSync: true})
	mustAppend(t, s, f.es[3:6])
	s.Close()
	idx, err := openIndex(filepath.Join(dir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.db.Delete(metaBaseKey, nil); err != nil {
		t.Fatal(err)
	}
	idx.close()
	s = openStore(t, dir, Options{NoSync: true})
	defer s.Close()
	if r := s.Stats().LastRepair; !r.IndexRebuilt || !strings.Contains(r.RebuildCause, "base") {
		t.Fatalf("repair: %s, want a rebuild because of the base", r)
	}
	checkBaseContents(t, s, f, 6)
	mustAppend(t, s, f.es[6:])
	checkBaseContents(t, s, f, 8)
}
