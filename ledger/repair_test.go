package ledger

import (
	"os"
	"testing"
)

// tornFixture is a closed store of K blocks and where its frames lie.
type tornFixture struct {
	dir     string
	opts    Options
	es      []Entry
	lastSeg int
	// firstInLast is the number of blocks in the segments before the last;
	// ends[i] is the end offset of the last segment's i-th frame.
	firstInLast int
	ends        []int64
	size        int64
}

func newTornFixture(t *testing.T, segSize int64) *tornFixture {
	dir := t.TempDir()
	f := &tornFixture{dir: dir, opts: Options{SegmentSize: segSize, NoSync: true}}
	f.opts.EnsureDefaults()
	s := openStore(t, dir, f.opts)
	var c chain
	f.es = c.blocks(10, 2)
	mustAppend(t, s, f.es[:3])
	mustAppend(t, s, f.es[3:])
	st := s.Stats()
	s.Close()
	f.lastSeg = st.Segments - 1
	// Locate the frames of the last segment.
	var off int64
	for _, e := range f.es {
		size := int64(frameHeaderSize + len(e.Raw))
		if off > 0 && off+size > f.opts.SegmentSize {
			off, f.firstInLast, f.ends = 0, int(e.Number), nil
		}
		off += size
		f.ends = append(f.ends, off)
	}
	f.size = off
	fi, err := os.Stat(segPath(dir, f.lastSeg))
	if err != nil || fi.Size() != f.size {
		t.Fatalf("last segment: %v, size %d, want %d", err, fi.Size(), f.size)
	}
	return f
}

// completeBefore is the height of the store when the last segment is cut
// at off, and the end of the last complete frame before it.
func (f *tornFixture) completeBefore(off int64) (int, int64) {
	h, end := f.firstInLast, int64(0)
	for _, e := range f.ends {
		if e <= off {
			h, end = h+1, e
		}
	}
	return h, end
}

// check reopens a spoiled copy and checks that it holds wantH blocks,
// that cutBytes were cut, and that the chain continues.
func (f *tornFixture) check(t *testing.T, dir string, wantH int, cutBytes int64) {
	t.Helper()
	s := openStore(t, dir, f.opts)
	defer s.Close()
	r := s.Stats().LastRepair
	if r.CutBytes != cutBytes {
		t.Fatalf("repair %s: cut %d bytes, want %d", r, r.CutBytes, cutBytes)
	}
	checkContents(t, s, f.es, wantH)
	mustAppend(t, s, f.es[wantH:])
	checkContents(t, s, f.es, len(f.es))
}

func TestTornTail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		segSize int64
	}{
		{"one segment", 0},
		{"several segments", 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTornFixture(t, tc.segSize)
			lastStart := f.ends[len(f.ends)-2]
			var cuts []int64
			for off := lastStart; off < f.size; off++ {
				cuts = append(cuts, off) // every byte of the last frame
			}
			for i, end := range f.ends[:len(f.ends)-1] {
				start := int64(0)
				if i > 0 {
					start = f.ends[i-1]
				}
				cuts = append(cuts, start+1, start+7, start+frameHeaderSize, (start+end)/2, end-1)
			}
			cuts = append(cuts, 0)
			for _, cut := range cuts {
				dir := copyDir(t, f.dir)
				if err := os.Truncate(segPath(dir, f.lastSeg), cut); err != nil {
					t.Fatal(err)
				}
				h, end := f.completeBefore(cut)
				f.check(t, dir, h, cut-end)
			}
		})
	}
}

func TestGarbageTail(t *testing.T) {
	f := newTornFixture(t, 600)
	for _, tc := range []struct {
		name    string
		garbage []byte
	}{
		{"zeros", make([]byte, 100)},
		{"short", []byte{1, 2, 3}},
		{"huge length", []byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}},
		{"valid frame of the wrong block", appendFrame(nil, 3, f.es[3].Raw)},
		{"valid frame, not a block", appendFrame(nil, uint64(len(f.es)), []byte{0xff, 0xfe})},
		{"repeated last frame", appendFrame(nil, f.es[len(f.es)-1].Number, f.es[len(f.es)-1].Raw)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, f.dir)
			fh, err := os.OpenFile(segPath(dir, f.lastSeg), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			fh.Write(tc.garbage)
			fh.Close()
			f.check(t, dir, len(f.es), int64(len(tc.garbage)))
		})
	}
}
