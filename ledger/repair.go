package ledger

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/strand-ledger/strand/api"
	"google.golang.org/protobuf/proto"
)

// Repair reports what OpenBlockStore found and fixed.
type Repair struct {
	Scanned      uint64 // frames scanned past the last indexed block (all of them when rebuilding)
	Indexed      uint64 // blocks added to the index
	IndexRebuilt bool   // the index was cleared and rebuilt from every segment
	RebuildCause string // why, when IndexRebuilt

	CutSegment string // the segment truncated; "" when nothing was cut
	CutOffset  int64  // its new size
	CutBytes   int64  // bytes removed
	CutReason  string // what was wrong at CutOffset
}

// String describes the repair in one line.
func (r Repair) String() string {
	s := fmt.Sprintf("scanned %d blocks, indexed %d", r.Scanned, r.Indexed)
	if r.IndexRebuilt {
		s += fmt.Sprintf("; index rebuilt (%s)", r.RebuildCause)
	}
	if r.CutSegment != "" {
		s += fmt.Sprintf("; cut %d bytes from %s at offset %d (%s)", r.CutBytes, r.CutSegment, r.CutOffset, r.CutReason)
	}
	return s
}

// scanPos is where the recovery scan starts and what it expects there.
type scanPos struct {
	seg    int
	off    int64
	next   uint64             // number of the next block
	hash   [api.HashSize]byte // header hash of block next-1
	sealed []int64            // sizes of the segments before seg
}

// recover establishes the store's state from segs and the index: see
// "Recovery" in the package documentation.
func (s *BlockStore) recover(segs []*segment) error {
	sizes := make([]int64, len(segs))
	for i, seg := range segs {
		fi, err := seg.f.Stat()
		if err != nil {
			return fmt.Errorf("ledger: stat segment %s: %w", segmentName(seg.num), err)
		}
		sizes[i] = fi.Size()
	}
	pos, cause, err := s.trustedStart(segs, sizes)
	if err != nil {
		return err
	}
	if cause != "" {
		if err := s.idx.clear(); err != nil {
			return err
		}
		pos = s.basePos()
		s.repair.IndexRebuilt, s.repair.RebuildCause = true, cause
		if err := s.indexBase(); err != nil {
			return err
		}
	}
	if err := s.scanTail(segs, sizes, &pos); err != nil {
		return err
	}
	if s.repair.IndexRebuilt && s.repair.Scanned == 0 {
		s.repair.IndexRebuilt, s.repair.RebuildCause = false, "" // a new, empty store
	}
	for i := range segs[:len(segs)-1] {
		segs[i].sealed = sizes[i]
	}
	last := len(segs) - 1
	v := &snapshot{height: pos.next, hash: pos.hash, segs: segs, endSeg: last, endOff: sizes[last]}
	for _, n := range sizes[:last] {
		v.sizeSum += n
	}
	s.state.Store(v)
	s.w.segs, s.w.cur, s.w.size = segs, segs[last], sizes[last]
	return nil
}

// trustedStart returns where the index ends if the index's last-indexed
// record names an intact frame; otherwise the reason to rebuild.
func (s *BlockStore) trustedStart(segs []*segment, sizes []int64) (scanPos, string, error) {
	if s.base.Height > 0 {
		h, ok, err := s.idx.baseIndexed()
		if errors.Is(err, ErrCorrupt) {
			return scanPos{}, err.Error(), nil
		}
		if err != nil {
			return scanPos{}, "", err
		}
		if !ok || h != s.base.Height {
			return scanPos{}, "the snapshot base's tx ids are not indexed", nil
		}
	}
	m, ok, err := s.idx.lastIndexed()
	if errors.Is(err, ErrCorrupt) {
		return scanPos{}, err.Error(), nil
	}
	if err != nil {
		return scanPos{}, "", err
	}
	if !ok && s.base.Height > 0 {
		return s.basePos(), "", nil // no block past the base indexed yet: scan every segment
	}
	if !ok {
		return scanPos{}, "no last-indexed record", nil
	}
	if m.block < s.base.Height {
		return scanPos{}, fmt.Sprintf("last indexed block %d is below the base %d", m.block, s.base.Height), nil
	}
	loc, ok, err := s.idx.blockLocation(m.block)
	switch {
	case errors.Is(err, ErrCorrupt):
		return scanPos{}, err.Error(), nil
	case err != nil:
		return scanPos{}, "", err
	case !ok:
		return scanPos{}, fmt.Sprintf("last indexed block %d has no location", m.block), nil
	case loc.seg != m.seg || loc.off+loc.size != m.end:
		return scanPos{}, fmt.Sprintf("last indexed block %d: location %+v disagrees with end %d in segment %d", m.block, loc, m.end, m.seg), nil
	case m.seg >= len(segs) || m.end > sizes[m.seg]:
		return scanPos{}, fmt.Sprintf("last indexed block %d ends at %s offset %d, past the end of the segments", m.block, segmentName(m.seg), m.end), nil
	}
	num, raw, err := readSizedFrameAt(segs[m.seg].f, loc.off, loc.size)
	if err != nil {
		return scanPos{}, fmt.Sprintf("last indexed block %d in %s: %v", m.block, segmentName(m.seg), err), nil
	}
	if num != m.block {
		return scanPos{}, fmt.Sprintf("last indexed block %d: frame holds block %d", m.block, num), nil
	}
	var b api.Block
	if err := proto.Unmarshal(raw, &b); err != nil || b.GetHeader().GetNumber() != num {
		return scanPos{}, fmt.Sprintf("last indexed block %d does not decode to its header", m.block), nil
	}
	pos := scanPos{seg: m.seg, off: m.end, next: m.block + 1}
	copy(pos.hash[:], api.HeaderHash(b.Header))
	return pos, "", nil
}

// basePos is where the scan of a fresh index starts: at the first
// segment, expecting the base's first block.
func (s *BlockStore) basePos() scanPos {
	pos := scanPos{next: s.base.Height}
	copy(pos.hash[:], s.base.PrevHash)
	return pos
}

// indexBase adds the base file's tx ids to a cleared index, then records
// that they are there. A crash before that record is written makes the
// next open clear the index and start again.
func (s *BlockStore) indexBase() error {
	if s.base.Height == 0 {
		return nil
	}
	br, err := openBase(s.dir)
	if err != nil {
		return err
	}
	if br == nil {
		return fmt.Errorf("%w: base file %s disappeared", ErrCorrupt, filepath.Join(s.dir, BaseFile))
	}
	defer br.f.Close()
	w := s.w.index
	defer w.reset()
	err = br.eachTx(func(t TxRecord) error {
		if err := w.addTx(t); err != nil {
			return err
		}
		if w.size() > indexFlushSize {
			return w.commitBase(s.base.Height, false)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return w.commitBase(s.base.Height, true)
}

// indexFlushSize bounds the index batch while recovery scans.
const indexFlushSize = 8 << 20

// scanTail checks and indexes every frame from pos to the end of the
// segments, truncating the last segment at its first bad frame. It
// updates pos and sizes.
func (s *BlockStore) scanTail(segs []*segment, sizes []int64, pos *scanPos) error {
	w := s.w.index
	defer w.reset()
	var b api.Block
	var ids []string
	lastSeg, lastEnd, indexed := 0, int64(0), false
	for i := pos.seg; i < len(segs); i++ {
		off := int64(0)
		if i == pos.seg {
			off = pos.off
		}
		sc := newFrameScanner(segs[i].f, off, sizes[i])
		for {
			frameOff := sc.off
			num, raw, err := sc.next()
			if err == io.EOF {
				break
			}
			if err == nil {
				ids, err = checkScanned(&b, num, raw, pos, frameOff, ids[:0])
			}
			var fe *frameError
			if err != nil && !errors.As(err, &fe) {
				return fmt.Errorf("ledger: scan segment %s: %w", segmentName(i), err)
			}
			if err != nil && i < len(segs)-1 {
				return fmt.Errorf("%w: block %d in segment %s (not the last segment, so not a torn write): %v",
					ErrCorrupt, pos.next, segmentName(i), err)
			}
			if err != nil {
				if terr := segs[i].f.Truncate(frameOff); terr != nil {
					return fmt.Errorf("ledger: truncate segment %s to %d: %w", segmentName(i), frameOff, terr)
				}
				s.repair.CutSegment, s.repair.CutOffset = segmentName(i), frameOff
				s.repair.CutBytes, s.repair.CutReason = sizes[i]-frameOff, fmt.Sprintf("block %d: %v", pos.next, err)
				sizes[i] = frameOff
				break
			}
			s.repair.Scanned++
			loc := blockLoc{seg: i, off: frameOff, size: sc.off - frameOff}
			if err := w.addBlock(num, loc, ids, b.GetMetadata().GetValidationCodes()); err != nil {
				return fmt.Errorf("ledger: index block %d: %w", num, err)
			}
			copy(pos.hash[:], api.HeaderHash(b.Header))
			pos.next++
			s.repair.Indexed++
			lastSeg, lastEnd, indexed = i, sc.off, true
			if w.size() > indexFlushSize {
				if err := w.commit(indexMeta{block: num, seg: i, end: sc.off}); err != nil {
					return err
				}
			}
		}
	}
	if !indexed || w.size() == 0 {
		return nil
	}
	return w.commit(indexMeta{block: pos.next - 1, seg: lastSeg, end: lastEnd})
}

// checkScanned decodes a scanned frame into b and checks it continues the
// chain at pos. It returns the block's tx ids (appended to ids).
func checkScanned(b *api.Block, num uint64, raw []byte, pos *scanPos, off int64, ids []string) ([]string, error) {
	if num != pos.next {
		return ids, &frameError{off, fmt.Sprintf("frame holds block %d, want %d", num, pos.next)}
	}
	proto.Reset(b)
	if err := proto.Unmarshal(raw, b); err != nil {
		return ids, &frameError{off, fmt.Sprintf("block does not decode: %v", err)}
	}
	h := b.GetHeader()
	if h.GetNumber() != num {
		return ids, &frameError{off, fmt.Sprintf("header says block %d", h.GetNumber())}
	}
	prev := h.GetPreviousHash()
	if num == 0 && !allZero(prev) || num > 0 && string(prev) != string(pos.hash[:]) {
		return ids, &frameError{off, fmt.Sprintf("previous hash %s does not match the header hash of block %d", shortHex(prev), int64(num)-1)}
	}
	if dh := api.DataHash(b.Transactions); string(dh) != string(h.GetDataHash()) {
		return ids, &frameError{off, fmt.Sprintf("data hash %s, transactions hash to %s", shortHex(h.GetDataHash()), shortHex(dh))}
	}
	for _, tx := range b.Transactions {
		t, _, _ := api.DecodeTx(tx)
		ids = append(ids, t.ID())
	}
	return ids, nil
}
