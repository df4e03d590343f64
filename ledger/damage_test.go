package ledger

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// frameAt is where the layout of appendFrame and rollover puts a block.
type frameAt struct {
	seg       int
	off, size int64
}

// layout places es into segments of segSize (0: the default) as Append
// does.
func layout(es []Entry, segSize int64) []frameAt {
	if segSize == 0 {
		segSize = DefaultSegmentSize
	}
	var out []frameAt
	seg, off := 0, int64(0)
	for _, e := range es {
		size := int64(frameHeaderSize + len(e.Raw))
		if off > 0 && off+size > segSize {
			seg, off = seg+1, 0
		}
		out = append(out, frameAt{seg, off, size})
		off += size
	}
	return out
}

// damageFixture is a closed store of 30 blocks.
func damageFixture(t *testing.T, segSize int64) (string, Options, []Entry, []frameAt) {
	dir := t.TempDir()
	opts := Options{SegmentSize: segSize, NoSync: true}
	s := openStore(t, dir, opts)
	var c chain
	es := c.blocks(30, 2)
	mustAppend(t, s, es[:7])
	mustAppend(t, s, es[7:])
	s.Close()
	return dir, opts, es, layout(es, segSize)
}

// flip flips one bit of byte off of segment seg.
func flip(t *testing.T, dir string, seg int, off int64) {
	t.Helper()
	b, err := os.ReadFile(segPath(dir, seg))
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x40
	if err := os.WriteFile(segPath(dir, seg), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedFrame flips a bit in a complete frame: in its length, its
// CRC, its block number and its body, for blocks at the start, inside and
// at the end of segments of several sizes, with the index kept and
// deleted. A damaged block that sound frames follow is reported (Damaged,
// ErrCorrupt from its reads) and every other block stays; Replace then
// restores it, and the replacement survives reopening with and without
// the index. The store's last frame, which no sound frame follows, is cut
// and its bytes kept in quarantine (or, when the flip made its length run
// past the end, cut as a torn tail).
func TestDamagedFrame(t *testing.T) {
	for _, segSize := range []int64{0, 1000, 1700} {
		dir, opts, es, at := damageFixture(t, segSize)
		last := len(es) - 1
		victims := map[int]bool{0: true, 1: true, 13: true, last - 1: true, last: true}
		for i := 1; i < len(at); i++ {
			if at[i].seg != at[i-1].seg { // either side of a segment boundary
				victims[i-1], victims[i] = true, true
			}
		}
		for v := range victims {
			for _, rel := range []int64{1, 9, 20, at[v].size - 1} {
				for _, dropIndex := range []bool{false, true} {
					spoiled := copyDir(t, dir)
					flip(t, spoiled, at[v].seg, at[v].off+rel)
					if dropIndex {
						os.RemoveAll(filepath.Join(spoiled, "index"))
					}
					name := func() string {
						return "segment size " + itoa(segSize) + ", block " + itoa(int64(v)) + ", byte " + itoa(rel) + map[bool]string{true: ", index deleted"}[dropIndex]
					}
					s := openStore(t, spoiled, opts)
					if v == last {
						checkLastCut(t, name(), s, spoiled, es, rel)
						s.Close()
						continue
					}
					checkDamaged(t, name(), s, es, v, at[v])
					if err := s.Replace(es[v]); err != nil {
						t.Fatalf("%s: Replace: %v", name(), err)
					}
					checkContents(t, s, es, len(es))
					s.Close()
					for _, drop := range []bool{false, true} {
						if drop {
							os.RemoveAll(filepath.Join(spoiled, "index"))
						}
						s := openStore(t, spoiled, opts)
						if d := s.Damaged(); len(d) != 0 {
							t.Fatalf("%s: reopened after Replace (index deleted: %v): damaged %v", name(), drop, d)
						}
						checkContents(t, s, es, len(es))
						checkIterator(t, s, es)
						s.Close()
					}
				}
			}
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// checkDamaged checks that block v, at where, is reported damaged and
// that every other block reads and iterates as appended.
func checkDamaged(t *testing.T, name string, s *BlockStore, es []Entry, v int, where frameAt) {
	t.Helper()
	if h := s.Height(); h != uint64(len(es)) {
		t.Fatalf("%s: Height = %d, want %d: valid blocks were dropped (%s)", name, h, len(es), s.Stats().LastRepair)
	}
	d := s.Damaged()
	if len(d) != 1 || d[0].Block != uint64(v) || d[0].Segment != segmentName(where.seg) || d[0].Offset != where.off {
		t.Fatalf("%s: Damaged = %v, want block %d in %s at offset %d", name, d, v, segmentName(where.seg), where.off)
	}
	if st := s.Stats(); st.Damaged != 1 || st.LastRepair.CutBytes != 0 {
		t.Fatalf("%s: stats %s, want 1 damaged and nothing cut", name, st)
	}
	for i, e := range es {
		raw, err := s.RawBlock(uint64(i))
		if i == v {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: RawBlock(%d) of the damaged block = %v, want ErrCorrupt", name, i, err)
			}
			continue
		}
		if err != nil || string(raw) != string(e.Raw) {
			t.Fatalf("%s: RawBlock(%d) = %d bytes, %v; want the appended %d bytes", name, i, len(raw), err, len(e.Raw))
		}
	}
	if err := s.VerifyChain(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: VerifyChain = %v, want ErrCorrupt", name, err)
	}
	it := s.Iterator(uint64(v + 1))
	for i := v + 1; i < len(es); i++ {
		n, raw, err := it.Next()
		if err != nil || n != uint64(i) || string(raw) != string(es[i].Raw) {
			t.Fatalf("%s: iterator from %d: block %d = %d, %v", name, v+1, i, n, err)
		}
	}
	if e := s.Append(es[:1]); !errors.Is(e, ErrOutOfOrder) {
		t.Fatalf("%s: Append of block 0 = %v, want ErrOutOfOrder", name, e)
	}
}

// checkLastCut checks that the damaged last block was cut and its bytes
// kept unless they looked like a torn write, and that the chain goes on.
func checkLastCut(t *testing.T, name string, s *BlockStore, dir string, es []Entry, rel int64) {
	t.Helper()
	r := s.Stats().LastRepair
	if len(s.Damaged()) != 0 || r.CutBytes != int64(frameHeaderSize+len(es[len(es)-1].Raw)) {
		t.Fatalf("%s: damaged %v, repair %s: want the last frame cut", name, s.Damaged(), r)
	}
	if rel >= 4 && r.Quarantine == "" { // a flip in the length may make the frame look torn
		t.Fatalf("%s: repair %s: the cut bytes were not kept", name, r)
	}
	if r.Quarantine != "" {
		if b, err := os.ReadFile(r.Quarantine); err != nil || int64(len(b)) != r.CutBytes {
			t.Fatalf("%s: quarantine %s: %d bytes, %v; want %d", name, r.Quarantine, len(b), err, r.CutBytes)
		}
	}
	checkContents(t, s, es, len(es)-1)
	mustAppend(t, s, es[len(es)-1:])
	checkContents(t, s, es, len(es))
}

func checkIterator(t *testing.T, s *BlockStore, es []Entry) {
	t.Helper()
	it := s.Iterator(0)
	for i := range es {
		n, raw, err := it.Next()
		if err != nil || n != uint64(i) || string(raw) != string(es[i].Raw) {
			t.Fatalf("iterator: block %d = %d, %v", i, n, err)
		}
	}
	if _, _, err := it.Next(); err != io.EOF {
		t.Fatalf("iterator past the end: %v, want io.EOF", err)
	}
}

// TestReplaceRefuses checks that Replace takes only a damaged block, and
// only a block that fits the chain on both sides.
func TestReplaceRefuses(t *testing.T) {
	dir, opts, es, at := damageFixture(t, 1000)
	flip(t, dir, at[10].seg, at[10].off+20)
	s := openStore(t, dir, opts)
	defer s.Close()
	if err := s.Replace(es[11]); err == nil {
		t.Fatal("Replace of intact block 11 succeeded")
	}
	var other chain
	other.blocks(10, 2)
	if err := s.Replace(other.block(3, nil, nil)); !errors.Is(err, ErrChainBroken) {
		t.Fatalf("Replace with a block of another chain = %v, want ErrChainBroken", err)
	}
	if !invariants { // that build panics on an entry that disagrees with its raw bytes
		forged := es[10]
		forged.HeaderHash = es[9].HeaderHash
		if err := s.Replace(forged); !errors.Is(err, ErrChainBroken) {
			t.Fatalf("Replace with a wrong header hash = %v, want ErrChainBroken", err)
		}
	}
	if d := s.Damaged(); len(d) != 1 {
		t.Fatalf("after refused Replaces: damaged %v", d)
	}
}

// TestTwoDamagedBlocks damages two neighbouring frames at once: both are
// reported, the lower must be replaced first, and then the upper.
func TestTwoDamagedBlocks(t *testing.T) {
	dir, opts, es, at := damageFixture(t, 1000)
	flip(t, dir, at[12].seg, at[12].off+2) // the length: the scan cannot find block 13's frame from it
	flip(t, dir, at[13].seg, at[13].off+30)
	os.RemoveAll(filepath.Join(dir, "index"))
	s := openStore(t, dir, opts)
	defer s.Close()
	if d := s.Damaged(); len(d) != 2 || d[0].Block != 12 || d[1].Block != 13 || s.Height() != uint64(len(es)) {
		t.Fatalf("damaged %v, height %d; want blocks 12 and 13 of %d", d, s.Height(), len(es))
	}
	if err := s.Replace(es[13]); err == nil {
		t.Fatal("Replace(13) before 12 succeeded")
	}
	for _, n := range []int{12, 13} {
		if err := s.Replace(es[n]); err != nil {
			t.Fatalf("Replace(%d): %v", n, err)
		}
	}
	checkContents(t, s, es, len(es))
}

// TestCheck runs Check on a sound store, on one with a damaged frame
// (index kept and deleted), a torn tail, and a replaced block: it names
// the segment, offset and block of each problem and changes nothing.
func TestCheck(t *testing.T) {
	dir, opts, es, at := damageFixture(t, 1000)
	r, err := Check(dir)
	if err != nil || len(r.Problems) != 0 || r.Height != uint64(len(es)) || r.Segments != at[len(at)-1].seg+1 {
		t.Fatalf("Check of a sound store = %+v, %v", r, err)
	}
	for _, dropIndex := range []bool{false, true} {
		spoiled := copyDir(t, dir)
		flip(t, spoiled, at[10].seg, at[10].off+30)
		last := at[len(at)-1]
		if err := os.Truncate(segPath(spoiled, last.seg), last.off+last.size-3); err != nil {
			t.Fatal(err)
		}
		if dropIndex {
			os.RemoveAll(filepath.Join(spoiled, "index"))
		}
		r, err := Check(spoiled)
		if err != nil || len(r.Problems) != 2 {
			t.Fatalf("index deleted %v: Check = %+v, %v; want 2 problems", dropIndex, r, err)
		}
		p0, p1 := r.Problems[0], r.Problems[1]
		if p0.Block != 10 || p0.Segment != segmentName(at[10].seg) || p0.Offset != at[10].off ||
			p1.Block != uint64(len(es)-1) || p1.Segment != segmentName(last.seg) || p1.Offset != last.off {
			t.Fatalf("index deleted %v: problems %v", dropIndex, r.Problems)
		}
		t.Logf("index deleted %v: %v; index %s", dropIndex, r.Problems, r.Index)
		s := openStore(t, spoiled, opts) // Check changed nothing: Open finds both
		if d := s.Damaged(); len(d) != 1 || s.Stats().LastRepair.CutBytes != last.size-3 {
			t.Fatalf("index deleted %v: after Check, Open found %v, %s", dropIndex, d, s.Stats().LastRepair)
		}
		if err := s.Replace(es[10]); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if r, err := Check(spoiled); err != nil || len(r.Problems) != 0 || r.Replaced != 1 {
			t.Fatalf("index deleted %v: Check after Replace = %+v, %v", dropIndex, r, err)
		}
	}
}

// TestReplacementAfterCrash stands for a crash inside Replace: the
// replacement file was renamed into place (durable) but the unsynced
// index entry naming it was lost, beside a temporary file of a later
// attempt. Open must use the replacement, with the index kept (the
// scrub) and deleted (the scan); a replacement that does not check is
// ignored and the block stays damaged.
func TestReplacementAfterCrash(t *testing.T) {
	dir, opts, es, at := damageFixture(t, 1000)
	flip(t, dir, at[10].seg, at[10].off+30)
	s := openStore(t, dir, opts) // marks block 10 damaged in the index
	s.Close()
	rdir := filepath.Join(dir, replacedDir)
	frame := appendFrame(nil, 10, es[10].Raw)
	if err := writeFileSync(rdir, filepath.Join(rdir, "00000000000000000010.frame"), frame, false); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(rdir, "00000000000000000011.frame.tmp"), []byte("half"), 0o644)
	for _, bad := range []bool{false, true} {
		for _, dropIndex := range []bool{false, true} {
			spoiled := copyDir(t, dir)
			if bad {
				p := filepath.Join(spoiled, replacedDir, "00000000000000000010.frame")
				b, _ := os.ReadFile(p)
				b[len(b)-1] ^= 1
				os.WriteFile(p, b, 0o644)
			}
			if dropIndex {
				os.RemoveAll(filepath.Join(spoiled, "index"))
			}
			s := openStore(t, spoiled, opts)
			d := s.Damaged()
			if bad {
				if len(d) != 1 || d[0].Block != 10 {
					t.Fatalf("bad replacement, index deleted %v: damaged %v, want block 10", dropIndex, d)
				}
			} else {
				if len(d) != 0 {
					t.Fatalf("index deleted %v: damaged %v after a crash inside Replace", dropIndex, d)
				}
				checkContents(t, s, es, len(es))
				checkIterator(t, s, es)
			}
			s.Close()
		}
	}
}
