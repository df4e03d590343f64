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
	Scanned      uint64 `metric:"gauge"` // Frames scanned past the last indexed block when the store opened (all of them when rebuilding).
	Indexed      uint64 `metric:"gauge"` // Blocks added to the index when the store opened.
	IndexRebuilt bool   `metric:"gauge"` // 1 if the index was cleared and rebuilt from every segment when the store opened.
	RebuildCause string // why, when IndexRebuilt

	CutSegment string // the segment truncated; "" when nothing was cut
	CutOffset  int64  `metric:"gauge"` // The new size of the segment truncated when the store opened (a torn tail), 0 if none.
	CutBytes   int64  `metric:"gauge"` // Bytes cut from a torn tail when the store opened.
	CutReason  string // what was wrong at CutOffset
	Quarantine string // the file the cut bytes were kept in, when they were not a torn write

	Damaged []Damage // blocks found damaged (see Damage), in the order found
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
	if r.Quarantine != "" {
		s += "; kept them in " + r.Quarantine
	}
	for _, d := range r.Damaged {
		s += "; damaged " + d.String()
	}
	return s
}

// scanPos is where the recovery scan starts and what it expects there.
type scanPos struct {
	seg  int
	off  int64
	next uint64             // number of the next block
	hash [api.HashSize]byte // header hash of block next-1
	// hashUnknown: block next-1 is damaged, so the next block's link to
	// it cannot be checked (Replace checks it later).
	hashUnknown bool
	sealed      []int64 // sizes of the segments before seg
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
	if cause == "" && !s.opts.SkipScrub {
		if cause, err = s.scrub(segs, sizes, pos.next); err != nil {
			return err
		}
	}
	if cause != "" {
		if err := s.idx.clear(); err != nil {
			return err
		}
		s.dmg.damaged, s.dmg.replaced, s.repair.Damaged = map[uint64]Damage{}, map[uint64]bool{}, nil
		s.dmg.any.Store(false)
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
// segments and updates pos and sizes. A bad frame followed by a sound one
// (resync) is damage: the blocks in between are marked damaged (or taken
// from their replacement files) and the scan goes on. A bad frame that no
// sound frame follows ends the store (cutTail).
func (s *BlockStore) scanTail(segs []*segment, sizes []int64, pos *scanPos) error {
	w := s.w.index
	defer w.reset()
	var last indexMeta
	indexed := false
	err := walkFrames(segs, sizes, pos.seg, pos.off, pos, "scan", frameWalk{
		sound: func(num uint64, loc blockLoc, b *api.Block, ids []string) error {
			s.repair.Scanned++
			if err := w.addBlock(num, loc, ids, b.GetMetadata().GetValidationCodes()); err != nil {
				return fmt.Errorf("ledger: index block %d: %w", num, err)
			}
			s.repair.Indexed++
			last, indexed = indexMeta{block: num, seg: loc.seg, end: loc.off + loc.size}, true
			if w.size() > indexFlushSize {
				return w.commit(last)
			}
			return nil
		},
		damage: s.skipDamage,
		tail: func(seg int, off int64, cause error, _ bool) error {
			return s.cutTail(segs, sizes, seg, off, pos.next, cause)
		},
	})
	if err != nil {
		return err
	}
	if !indexed || w.size() == 0 {
		return nil
	}
	return w.commit(last)
}

// frameWalk is what walkFrames does with what it meets, in order; an
// error from any of them ends the walk.
type frameWalk struct {
	// sound: block num checks (checkScanned) and lies at loc; b and ids
	// are reused by the next call. walkFrames then advances pos past it.
	sound func(num uint64, loc blockLoc, b *api.Block, ids []string) error
	// damage: bytes at (seg, off) do not check, cause says why, and the
	// next sound frame holds block upTo: blocks pos.next .. upTo-1 lie in
	// them. It must leave pos.next at upTo.
	damage func(pos *scanPos, seg int, off int64, upTo uint64, cause error) error
	// tail: bytes at (seg, off) do not check and no sound frame follows
	// them anywhere (incomplete: the segment ends inside the frame, what
	// a torn write leaves). The walk ends after it.
	tail func(seg int, off int64, cause error, incomplete bool) error
}

// walkFrames reads the frames of segs from offset off of segment seg to
// the end, checks each against pos as recovery does, advances pos past
// every sound block, and hands what it finds to w. Recovery (scanTail)
// and the offline check (Check) both walk with it, so that they judge a
// store alike; what names the walk in errors.
func walkFrames(segs []*segment, sizes []int64, seg int, off int64, pos *scanPos, what string, w frameWalk) error {
	var b api.Block
	var ids []string
	i := seg
scan:
	for i < len(segs) {
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
				return fmt.Errorf("ledger: %s segment %s: %w", what, segmentName(i), err)
			}
			if err != nil {
				at, found, rerr := resync(segs, sizes, i, frameOff, pos.next)
				if rerr != nil {
					return rerr
				}
				if !found {
					return w.tail(i, frameOff, err, fe.incomplete)
				}
				if err := w.damage(pos, i, frameOff, at.num, err); err != nil {
					return err
				}
				i, off = at.seg, at.off
				continue scan
			}
			if err := w.sound(num, blockLoc{seg: i, off: frameOff, size: sc.off - frameOff}, &b, ids); err != nil {
				return err
			}
			copy(pos.hash[:], api.HeaderHash(b.Header))
			pos.next++
			pos.hashUnknown = false
		}
		i, off = i+1, 0
	}
	return nil
}

// skipDamage accounts for blocks pos.next .. upTo-1, whose frames lie in
// damaged bytes starting at offset off of segment seg: each is taken from
// its replacement file if it has a sound one, or else marked damaged.
func (s *BlockStore) skipDamage(pos *scanPos, seg int, off int64, upTo uint64, cause error) error {
	first := pos.next
	for n := first; n < upTo; n++ {
		var prev []byte // nil: not known
		if !pos.hashUnknown && n > s.base.Height {
			prev = pos.hash[:]
		} else if n == s.base.Height && n > 0 {
			prev = s.base.PrevHash
		}
		if hh, ok := s.useReplacement(n, prev); ok {
			copy(pos.hash[:], hh)
			pos.hashUnknown = false
			continue
		}
		reason := cause.Error()
		if n > first {
			reason = fmt.Sprintf("no sound frame between block %d's (damaged: %v) and block %d's", first, cause, upTo)
		}
		if err := s.markDamaged(Damage{Block: n, Segment: segmentName(seg), Offset: off, Reason: reason}, seg); err != nil {
			return fmt.Errorf("ledger: index damaged block %d: %w", n, err)
		}
		pos.hashUnknown = true
	}
	pos.next = upTo
	return nil
}

// scrub reads the frame of every indexed block below end (its CRC and
// number; decoding every block at every open would cost too much) and
// marks the damaged ones. It returns a reason to rebuild the index when
// the index itself does not fit the segments.
func (s *BlockStore) scrub(segs []*segment, sizes []int64, end uint64) (string, error) {
	w := s.w.index
	defer w.reset()
	for n := s.base.Height; n < end; n++ {
		loc, ok, err := s.idx.blockLocation(n)
		switch {
		case errors.Is(err, ErrCorrupt):
			return err.Error(), nil
		case err != nil:
			return "", err
		case !ok:
			return fmt.Sprintf("block %d has no index entry", n), nil
		}
		if loc.seg == replacedSeg {
			if _, _, err := s.readReplacement(n, loc.size); err != nil {
				return err.Error(), nil
			}
			s.dmg.Lock()
			s.dmg.replaced[n] = true
			s.dmg.any.Store(true)
			s.dmg.Unlock()
			continue
		}
		if loc.seg >= len(segs) || loc.off+loc.size > sizes[loc.seg] {
			return fmt.Sprintf("block %d's index entry %+v lies past the end of the segments", n, loc), nil
		}
		num, _, err := readSizedFrameAt(segs[loc.seg].f, loc.off, loc.size)
		if err == nil && num != n {
			err = &frameError{loc.off, fmt.Sprintf("frame holds block %d", num), false}
		}
		var fe *frameError
		if err != nil && !errors.As(err, &fe) {
			return "", fmt.Errorf("ledger: scrub block %d in segment %s: %w", n, segmentName(loc.seg), err)
		}
		if err == nil {
			continue
		}
		if _, ok := s.useReplacement(n, nil); ok {
			continue
		}
		if err := s.markDamaged(Damage{Block: n, Segment: segmentName(loc.seg), Offset: loc.off, Reason: err.Error()}, loc.seg); err != nil {
			return "", err
		}
	}
	if w.size() == 0 {
		return "", nil
	}
	return "", w.flush()
}

// checkScanned decodes a scanned frame into b and checks it continues the
// chain at pos. It returns the block's tx ids (appended to ids).
func checkScanned(b *api.Block, num uint64, raw []byte, pos *scanPos, off int64, ids []string) ([]string, error) {
	if num != pos.next {
		return ids, &frameError{off, fmt.Sprintf("frame holds block %d, want %d", num, pos.next), false}
	}
	proto.Reset(b)
	if err := proto.Unmarshal(raw, b); err != nil {
		return ids, &frameError{off, fmt.Sprintf("block does not decode: %v", err), false}
	}
	h := b.GetHeader()
	if h.GetNumber() != num {
		return ids, &frameError{off, fmt.Sprintf("header says block %d", h.GetNumber()), false}
	}
	prev := h.GetPreviousHash()
	if num == 0 && !allZero(prev) || num > 0 && !pos.hashUnknown && string(prev) != string(pos.hash[:]) {
		return ids, &frameError{off, fmt.Sprintf("previous hash %s does not match the header hash of block %d", shortHex(prev), int64(num)-1), false}
	}
	if dh := api.DataHash(b.Transactions); string(dh) != string(h.GetDataHash()) {
		return ids, &frameError{off, fmt.Sprintf("data hash %s, transactions hash to %s", shortHex(h.GetDataHash()), shortHex(dh)), false}
	}
	for _, tx := range b.Transactions {
		t, _, _ := api.DecodeTx(tx)
		ids = append(ids, t.ID())
	}
	return ids, nil
}
