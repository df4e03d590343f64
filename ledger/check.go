package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/cockroachdb/pebble/v2"
	"github.com/strand-ledger/strand/api"
)

// Problem is something Check found wrong with a stopped store.
type Problem struct {
	Segment string // "" when the problem is not in a segment (the index)
	Offset  int64
	Block   uint64
	Reason  string
}

func (p Problem) String() string {
	if p.Segment == "" {
		return fmt.Sprintf("block %d: %s", p.Block, p.Reason)
	}
	return fmt.Sprintf("%s offset %d: block %d: %s", p.Segment, p.Offset, p.Block, p.Reason)
}

// CheckReport is what Check found.
type CheckReport struct {
	Base     uint64 // the first block (0, or a snapshot base)
	Height   uint64 // the height the store would open at, damaged blocks included
	Segments int
	Replaced int    // damaged blocks that their replacement files restore
	Index    string // the state of the index, in words
	Problems []Problem
}

// Check verifies the block store in dir without changing anything: every
// frame (length, CRC, number), every block (it decodes, links to the one
// before, matches its data hash), the replacement files of damaged
// blocks, and every index entry against where the block is. It reports
// what OpenBlockStore would repair (a torn tail to cut, damaged blocks to
// replace) as problems; an index that is absent or behind the segments
// is not one (the index is never fsynced; Open brings it up to date).
// The store must not be open (the index's lock says so).
func Check(dir string) (CheckReport, error) {
	var r CheckReport
	base, err := readBase(dir)
	if err != nil {
		return r, err
	}
	r.Base = base.Height
	segs, err := openSegmentFiles(filepath.Join(dir, "blocks"), os.O_RDONLY)
	if err != nil {
		return r, err
	}
	defer closeSegments(segs)
	r.Segments = len(segs)
	sizes := make([]int64, len(segs))
	for i, seg := range segs {
		fi, err := seg.f.Stat()
		if err != nil {
			return r, err
		}
		sizes[i] = fi.Size()
	}
	locs, err := checkFrames(dir, segs, sizes, base, &r)
	if err != nil {
		return r, err
	}
	return r, checkIndex(dir, locs, &r)
}

// checkFrames walks every frame as recovery's scan does, and returns
// where each block is (replacedSeg for a replaced one).
func checkFrames(dir string, segs []*segment, sizes []int64, base Base, r *CheckReport) (map[uint64]blockLoc, error) {
	locs := map[uint64]blockLoc{}
	pos := scanPos{next: base.Height}
	copy(pos.hash[:], base.PrevHash)
	err := walkFrames(segs, sizes, 0, 0, &pos, "check", frameWalk{
		sound: func(num uint64, loc blockLoc, _ *api.Block, _ []string) error {
			locs[num] = loc
			return nil
		},
		damage: func(pos *scanPos, seg int, off int64, upTo uint64, cause error) error {
			for n := pos.next; n < upTo; n++ {
				_, rb, rerr := readReplacementFile(filepath.Join(dir, replacedDir, fmt.Sprintf("%020d.frame", n)), n, 0)
				if rerr == nil && (pos.hashUnknown || bytes.Equal(rb.Header.PreviousHash, pos.hash[:]) || n == 0) {
					r.Replaced++
					locs[n] = blockLoc{seg: replacedSeg}
					copy(pos.hash[:], api.HeaderHash(rb.Header))
					pos.hashUnknown = false
					continue
				}
				r.Problems = append(r.Problems, Problem{segmentName(seg), off, n, "damaged, not replaced (a peer fetches it from the ordering service at start): " + cause.Error()})
				pos.hashUnknown = true
			}
			pos.next = upTo
			return nil
		},
		tail: func(seg int, off int64, cause error, incomplete bool) error {
			what := "the last frame is complete but does not check, and no sound frame follows (Open moves it to quarantine and cuts it)"
			if incomplete {
				what = "torn tail (Open cuts it)"
			}
			r.Problems = append(r.Problems, Problem{segmentName(seg), off, pos.next, what + ": " + cause.Error()})
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	r.Height = pos.next
	return locs, nil
}

// checkIndex compares the index's entries with locs.
func checkIndex(dir string, locs map[uint64]blockLoc, r *CheckReport) error {
	path := filepath.Join(dir, "index")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		r.Index = "absent (Open rebuilds it from the segments)"
		return nil
	}
	db, err := pebble.Open(path, &pebble.Options{ReadOnly: true, Logger: quietLogger{}})
	if err != nil {
		return fmt.Errorf("ledger: open the index read-only (is the node stopped?): %w", err)
	}
	defer db.Close()
	x := &index{db: db}
	m, ok, err := x.lastIndexed()
	if err != nil || !ok {
		why := "none found"
		if err != nil {
			why = err.Error()
		}
		r.Index = fmt.Sprintf("no usable last-indexed record (%s): Open rebuilds it", why)
		return nil
	}
	nums := make([]uint64, 0, len(locs))
	for n := range locs {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	for _, n := range nums {
		if n > m.block {
			break
		}
		loc, ok, err := x.blockLocation(n)
		want := locs[n]
		switch {
		case err != nil:
			r.Problems = append(r.Problems, Problem{Block: n, Reason: "index: " + err.Error()})
		case !ok:
			r.Problems = append(r.Problems, Problem{Block: n, Reason: "index: no entry below the last indexed block"})
		case want.seg == replacedSeg && loc.seg != replacedSeg:
			r.Problems = append(r.Problems, Problem{Block: n, Reason: fmt.Sprintf("index: entry %+v does not name the replacement (Open fixes it)", loc)})
		case want.seg != replacedSeg && loc != want:
			r.Problems = append(r.Problems, Problem{Block: n, Reason: fmt.Sprintf("index: entry %+v, the frame is at %+v", loc, want)})
		}
	}
	r.Index = fmt.Sprintf("up to block %d", m.block)
	if m.block+1 < r.Height {
		r.Index += fmt.Sprintf(" (Open indexes blocks %d-%d)", m.block+1, r.Height-1)
	}
	return nil
}
