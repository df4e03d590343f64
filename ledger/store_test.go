package ledger

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/strand-ledger/strand/api"
)

func TestAppendReadIterate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		segSize int64
		groups  []int // Append sizes
		ntx     int
	}{
		{"one segment", 0, []int{1, 1, 5, 10}, 3},
		{"rollover every frame", MinSegmentSize, []int{1, 2, 3, 7}, 4},
		{"rollover in a group", 1024, []int{20, 1, 30}, 2},
		{"empty blocks", 512, []int{3, 4}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentSize: tc.segSize, NoSync: true}
			s := openStore(t, dir, opts)
			var c chain
			var all []Entry
			for _, g := range tc.groups {
				es := c.blocks(g, tc.ntx)
				mustAppend(t, s, es)
				all = append(all, es...)
			}
			checkContents(t, s, all, len(all))
			if tc.segSize > 0 && tc.segSize <= 1024 && s.Stats().Segments < 2 {
				t.Fatalf("expected rollover, stats: %s", s.Stats())
			}
			for _, from := range []uint64{0, 1, uint64(len(all) / 2), uint64(len(all) - 1)} {
				it := s.Iterator(from)
				for n := from; n < uint64(len(all)); n++ {
					num, raw, err := it.Next()
					if err != nil || num != n || string(raw) != string(all[n].Raw) {
						t.Fatalf("Iterator(%d).Next = %d, %v; want block %d", from, num, err, n)
					}
				}
				if _, _, err := it.Next(); err != io.EOF {
					t.Fatalf("Next at end = %v, want io.EOF", err)
				}
				it.Close()
			}
			blk, err := s.Block(2)
			if err != nil || blk.Header.Number != 2 {
				t.Fatalf("Block(2) = %v, %v", blk, err)
			}
			if _, err := s.RawBlock(uint64(len(all))); !errors.Is(err, ErrNotFound) {
				t.Fatalf("RawBlock(height) = %v, want ErrNotFound", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir, opts)
			defer s.Close()
			if r := s.Stats().LastRepair; r.IndexRebuilt || r.CutBytes != 0 || r.Scanned != 0 {
				t.Fatalf("clean reopen repaired something: %s", r)
			}
			checkContents(t, s, all, len(all))
			more := c.blocks(3, tc.ntx)
			mustAppend(t, s, more)
			checkContents(t, s, append(all, more...), len(all)+3)
		})
	}
}

func TestIteratorFollowsAppends(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{SegmentSize: MinSegmentSize, NoSync: true})
	defer s.Close()
	var c chain
	it := s.Iterator(0)
	ahead := s.Iterator(3)
	for round := 0; round < 4; round++ {
		es := c.blocks(2, 1)
		mustAppend(t, s, es)
		for _, e := range es {
			if n, raw, err := it.Next(); err != nil || n != e.Number || string(raw) != string(e.Raw) {
				t.Fatalf("Next = %d, %v; want block %d", n, err, e.Number)
			}
		}
		if _, _, err := it.Next(); err != io.EOF {
			t.Fatalf("Next at end = %v, want io.EOF", err)
		}
	}
	if n, _, err := ahead.Next(); err != nil || n != 3 {
		t.Fatalf("Iterator(3).Next = %d, %v", n, err)
	}
	it.Close()
	if _, _, err := it.Next(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close = %v, want ErrClosed", err)
	}
}

func TestAppendRefusals(t *testing.T) {
	var c chain
	es := c.blocks(4, 1)
	other := (&chain{}).blocks(1, 2)[0]
	zero := es[0]
	zero.PrevHash = make([]byte, 32)
	badPrev0 := es[0]
	badPrev0.PrevHash = []byte{1}
	broken := es[2]
	broken.PrevHash = es[0].HeaderHash
	shortHash := es[2]
	shortHash.HeaderHash = []byte{1, 2}
	codes := es[2]
	codes.Codes = nil
	for _, tc := range []struct {
		name   string
		stored []Entry
		append []Entry
		want   error // nil: accepted
	}{
		{"first block not 0", nil, es[1:2], ErrOutOfOrder},
		{"block 0 zero prev hash", nil, []Entry{zero}, nil},
		{"block 0 non-zero prev hash", nil, []Entry{badPrev0}, ErrChainBroken},
		{"gap", es[:2], es[3:4], ErrOutOfOrder},
		{"repeat", es[:2], es[1:2], ErrOutOfOrder},
		{"gap inside group", es[:1], []Entry{es[1], es[3]}, ErrOutOfOrder},
		{"broken link", es[:2], []Entry{broken}, ErrChainBroken},
		{"broken link inside group", es[:1], []Entry{es[1], broken}, ErrChainBroken},
		{"other chain", es[:1], []Entry{{Number: 1, PrevHash: other.HeaderHash, HeaderHash: other.HeaderHash, Raw: other.Raw}}, ErrChainBroken},
		{"short header hash", es[:2], []Entry{shortHash}, errors.New("")},
		{"codes mismatch", es[:2], []Entry{codes}, errors.New("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if invariants && tc.want == nil {
				t.Skip("the entry disagrees with its raw block on purpose")
			}
			s := openStore(t, t.TempDir(), Options{NoSync: true})
			defer s.Close()
			if len(tc.stored) > 0 {
				mustAppend(t, s, tc.stored)
			}
			before := s.Stats()
			err := s.Append(tc.append)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("Append: %v", err)
			case tc.want != nil && err == nil:
				t.Fatalf("Append succeeded, want %v", tc.want)
			case tc.want != nil && tc.want.Error() != "" && !errors.Is(err, tc.want):
				t.Fatalf("Append = %v, want %v", err, tc.want)
			}
			if tc.want != nil {
				if after := s.Stats(); after.Height != before.Height || after.Bytes != before.Bytes {
					t.Fatalf("refused Append changed the store: %s -> %s", before, after)
				}
				// The store still accepts the right block.
				mustAppend(t, s, es[len(tc.stored):len(tc.stored)+1])
			}
			t.Logf("error: %v", err)
		})
	}
}

func TestDuplicateTxIDs(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{NoSync: true})
	var c chain
	dup := api.TxValidationCode_DUPLICATE_TXID
	es := []Entry{
		c.block(2, nil, map[int]string{1: "dup"}),
		c.block(3, map[int]api.TxValidationCode{0: dup, 2: api.TxValidationCode_MVCC_READ_CONFLICT}, map[int]string{0: "dup", 2: "conflict"}),
		c.block(2, map[int]api.TxValidationCode{0: dup, 1: dup}, map[int]string{0: "dup", 1: "conflict"}),
	}
	mustAppend(t, s, es)
	check := func() {
		t.Helper()
		for id, want := range map[string]Location{
			"dup":      {Block: 0, Tx: 1, Code: api.TxValidationCode_VALID},
			"conflict": {Block: 1, Tx: 2, Code: api.TxValidationCode_MVCC_READ_CONFLICT},
		} {
			if loc, ok, err := s.TxLocation(id); err != nil || !ok || loc != want {
				t.Fatalf("TxLocation(%q) = %+v, %v, %v; want %+v", id, loc, ok, err, want)
			}
		}
		if _, ok, _ := s.TxLocation("absent"); ok {
			t.Fatal("TxLocation(absent) found")
		}
	}
	check()
	s.Close()
	// The rebuilt index follows the same rule.
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, Options{NoSync: true})
	defer s.Close()
	if !s.Stats().LastRepair.IndexRebuilt {
		t.Fatal("index not rebuilt")
	}
	check()
}

func TestIndexRebuild(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, dir string)
	}{
		{"index deleted", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
				t.Fatal(err)
			}
		}},
		{"index emptied", func(t *testing.T, dir string) {
			x, err := openIndex(filepath.Join(dir, "index"))
			if err != nil {
				t.Fatal(err)
			}
			x.clear()
			x.close()
		}},
		{"index behind", func(t *testing.T, dir string) {
			x, err := openIndex(filepath.Join(dir, "index"))
			if err != nil {
				t.Fatal(err)
			}
			// Forget the last 5 blocks' records, as an unsynced index may.
			w := newIndexWriter(x)
			loc, _, _ := x.blockLocation(14)
			w.batch.DeleteRange(blockKey(nil, 15), blockKey(nil, 1<<40), nil)
			w.commit(indexMeta{block: 14, seg: loc.seg, end: loc.off + loc.size})
			w.close()
			x.close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentSize: 1024, NoSync: true}
			s := openStore(t, dir, opts)
			var c chain
			es := c.blocks(20, 3)
			mustAppend(t, s, es)
			s.Close()
			tc.spoil(t, dir)
			s = openStore(t, dir, opts)
			defer s.Close()
			t.Logf("repair: %s", s.Stats().LastRepair)
			checkContents(t, s, es, len(es))
			more := c.blocks(2, 1)
			mustAppend(t, s, more)
			checkContents(t, s, append(es, more...), len(es)+2)
		})
	}
}

func TestClosed(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{NoSync: true})
	var c chain
	mustAppend(t, s, c.blocks(1, 1))
	it := s.Iterator(0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Append(c.blocks(1, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
	if _, err := s.RawBlock(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("RawBlock after Close = %v", err)
	}
	if _, _, err := s.TxLocation("tx-0-0"); !errors.Is(err, ErrClosed) {
		t.Fatalf("TxLocation after Close = %v", err)
	}
	if _, _, err := it.Next(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close = %v", err)
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		ok   bool
	}{
		{Options{}, true},
		{Options{SegmentSize: MinSegmentSize}, true},
		{Options{SegmentSize: MinSegmentSize - 1}, false},
		{Options{SegmentSize: -1}, false},
	} {
		o := tc.opts
		o.EnsureDefaults()
		if err := o.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: Validate = %v, want ok=%v", tc.opts, err, tc.ok)
		}
	}
	if _, err := OpenBlockStore(t.TempDir(), Options{SegmentSize: 10}); err == nil {
		t.Fatal("OpenBlockStore accepted SegmentSize 10")
	}
}

// TestConcurrentReaders runs readers beside one appender; run with -race.
func TestConcurrentReaders(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{SegmentSize: 2048, NoSync: true})
	defer s.Close()
	var c chain
	es := c.blocks(400, 2)
	done := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() { // random reads of the newest block
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				h := s.Height()
				if h == 0 {
					continue
				}
				raw, err := s.RawBlock(h - 1)
				if err != nil || string(raw) != string(es[h-1].Raw) {
					report(errors.Join(errors.New("RawBlock mismatch"), err))
					return
				}
				if loc, ok, err := s.TxLocation(es[h-1].TxIDs[0]); err != nil || !ok || loc.Block != h-1 {
					report(errors.Join(errors.New("TxLocation mismatch"), err))
					return
				}
			}
		}()
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() { // iterators follow the appender to the end
			defer wg.Done()
			it := s.Iterator(0)
			defer it.Close()
			for n := uint64(0); n < uint64(len(es)); {
				num, raw, err := it.Next()
				if err == io.EOF {
					continue
				}
				if err != nil || num != n || string(raw) != string(es[n].Raw) {
					report(errors.Join(errors.New("iterator mismatch"), err))
					return
				}
				n++
			}
		}()
	}
	for i := 0; i < len(es); {
		g := 1 + i%5
		if i+g > len(es) {
			g = len(es) - i
		}
		mustAppend(t, s, es[i:i+g])
		i += g
	}
	close(done)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	checkContents(t, s, es, len(es))
}
