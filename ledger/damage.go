package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/strand-ledger/strand/api"
	"google.golang.org/protobuf/proto"
)

// Damage is a block whose stored frame cannot be read back: its bytes
// fail their checksum, do not decode, or do not continue the hash chain.
// The blocks after it are intact and served; the damaged one waits for
// Replace. See "Damage and replacement" in the package documentation.
type Damage struct {
	Block   uint64
	Segment string // the segment file holding the damaged bytes
	Offset  int64  // where the damaged range starts in it
	Reason  string
}

func (d Damage) String() string {
	return fmt.Sprintf("block %d: %s offset %d: %s", d.Block, d.Segment, d.Offset, d.Reason)
}

// replacedSeg is the segment number an index entry gives a block whose
// frame lives in its replacement file (offset 0) instead of a segment.
const replacedSeg = 1 << 31

// replacedDir holds the replacement frames, one file per block.
const replacedDir = "replaced"

// quarantineDir holds bytes cut from the tail that were not a torn write.
const quarantineDir = "quarantine"

func (s *BlockStore) replacedPath(n uint64) string {
	return filepath.Join(s.dir, replacedDir, fmt.Sprintf("%020d.frame", n))
}

// Damaged lists the damaged blocks not yet replaced, lowest first.
func (s *BlockStore) Damaged() []Damage {
	s.dmg.Lock()
	defer s.dmg.Unlock()
	out := make([]Damage, 0, len(s.dmg.damaged))
	for _, d := range s.dmg.damaged {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Block < out[j].Block })
	return out
}

// irregular reports whether block n is not where the sequential reading
// of the segments would find it: damaged, or replaced.
func (s *BlockStore) irregular(n uint64) bool {
	if !s.dmg.any.Load() {
		return false
	}
	s.dmg.Lock()
	defer s.dmg.Unlock()
	_, d := s.dmg.damaged[n]
	return d || s.dmg.replaced[n]
}

func (s *BlockStore) damage(n uint64) (Damage, bool) {
	s.dmg.Lock()
	defer s.dmg.Unlock()
	d, ok := s.dmg.damaged[n]
	return d, ok
}

// markDamaged records block n as damaged, logs it at ERROR and gives it
// an index entry of size 0 (which no read accepts), so that the next
// Open finds it again without rebuilding the index.
func (s *BlockStore) markDamaged(d Damage, seg int) error {
	s.dmg.Lock()
	s.dmg.damaged[d.Block] = d
	s.dmg.any.Store(true)
	s.dmg.Unlock()
	s.repair.Damaged = append(s.repair.Damaged, d)
	s.opts.Logger.Error("ledger: damaged block: its frame is complete but does not check; the blocks after it are kept",
		"block", d.Block, "segment", filepath.Join(s.blockDir, d.Segment), "offset", d.Offset, "reason", d.Reason)
	return s.w.index.addBlock(d.Block, blockLoc{seg: seg, off: d.Offset, size: 0}, nil, nil)
}

// readReplacement reads block n's replacement file: see
// readReplacementFile.
func (s *BlockStore) readReplacement(n uint64, size int64) ([]byte, *api.Block, error) {
	return readReplacementFile(s.replacedPath(n), n, size)
}

// readReplacementFile reads the replacement file of block n at path, if
// there is one, and checks its frame, its number and that it decodes.
// size is the frame size the index gave, or 0 to take it from the file.
func readReplacementFile(path string, n uint64, size int64) (raw []byte, b *api.Block, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var num uint64
	if size == 0 {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			num, raw, _, err = readFrameAt(f, 0, fi.Size())
		}
	} else {
		num, raw, err = readSizedFrameAt(f, 0, size)
	}
	if err == nil && num != n {
		err = fmt.Errorf("holds block %d", num)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: replacement of block %d (%s): %v", ErrCorrupt, n, path, err)
	}
	b = new(api.Block)
	if err := proto.Unmarshal(raw, b); err != nil || b.GetHeader().GetNumber() != n {
		return nil, nil, fmt.Errorf("%w: replacement of block %d (%s) does not decode to its header", ErrCorrupt, n, path)
	}
	return raw, b, nil
}

// useReplacement indexes block n from its replacement file if that holds
// a sound frame of block n whose previous hash is prev (nil: not known,
// because block n-1 is damaged too). It returns the block's header hash.
func (s *BlockStore) useReplacement(n uint64, prev []byte) ([]byte, bool) {
	raw, b, err := s.readReplacement(n, 0)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.opts.Logger.Error("ledger: ignoring a replacement that does not check", "block", n, "err", err)
		}
		return nil, false
	}
	if n == 0 && !allZero(b.Header.PreviousHash) || n > 0 && prev != nil && !bytes.Equal(b.Header.PreviousHash, prev) {
		s.opts.Logger.Error("ledger: ignoring a replacement that does not continue the chain", "block", n,
			"previous", shortHex(b.Header.PreviousHash), "want", shortHex(prev))
		return nil, false
	}
	ids := make([]string, len(b.Transactions))
	for i, tx := range b.Transactions {
		t, _, _ := api.DecodeTx(tx)
		ids[i] = t.ID()
	}
	loc := blockLoc{seg: replacedSeg, size: int64(frameHeaderSize + len(raw))}
	if err := s.w.index.addBlock(n, loc, ids, b.GetMetadata().GetValidationCodes()); err != nil {
		return nil, false
	}
	s.dmg.Lock()
	s.dmg.replaced[n] = true
	s.dmg.any.Store(true)
	s.dmg.Unlock()
	return api.HeaderHash(b.Header), true
}

// framePos is where a frame starts, and the block it holds.
type framePos struct {
	seg int
	off int64
	num uint64
}

// resync finds the first sound frame (plausible length, matching CRC) at
// or after offset off of segment i, in it or a later segment, that holds
// a block numbered above after. Only such a frame proves that the bytes
// before it are damage rather than a torn tail.
func resync(segs []*segment, sizes []int64, i int, off int64, after uint64) (framePos, bool, error) {
	for ; i < len(segs); i, off = i+1, 0 {
		if sizes[i]-off < frameHeaderSize {
			continue
		}
		buf := make([]byte, sizes[i]-off)
		if _, err := segs[i].f.ReadAt(buf, off); err != nil && err != io.EOF {
			return framePos{}, false, fmt.Errorf("ledger: read segment %s: %w", segmentName(segs[i].num), err)
		}
		for o := 0; o+frameHeaderSize <= len(buf); o++ {
			num := binary.LittleEndian.Uint64(buf[o+8:])
			if num <= after || num-after > 1<<32 {
				continue
			}
			size := 8 + int(binary.LittleEndian.Uint32(buf[o:]))
			if size < frameHeaderSize || o+size > len(buf) {
				continue
			}
			if crc32.Checksum(buf[o+8:o+size], castagnoli) == binary.LittleEndian.Uint32(buf[o+4:]) {
				return framePos{seg: i, off: off + int64(o), num: num}, true, nil
			}
		}
	}
	return framePos{}, false, nil
}

// cutTail removes everything from offset off of segment i on, where no
// sound frame follows (resync found none). An incomplete frame or zeros
// there are a torn write and are simply cut; anything else is damage to
// the last block(s), whose bytes are first copied to the quarantine
// directory and logged at ERROR: nothing is deleted that is not kept.
func (s *BlockStore) cutTail(segs []*segment, sizes []int64, i int, off int64, next uint64, cause error) error {
	var fe *frameError
	torn := errors.As(cause, &fe) && fe.incomplete
	var cut []byte
	for j := i; j < len(segs); j++ {
		from := int64(0)
		if j == i {
			from = off
		}
		b := make([]byte, sizes[j]-from)
		if _, err := segs[j].f.ReadAt(b, from); err != nil && err != io.EOF {
			return fmt.Errorf("ledger: read segment %s: %w", segmentName(j), err)
		}
		cut = append(cut, b...)
	}
	if !torn && !allZero(cut) {
		if err := s.quarantine(segmentName(i), off, cut); err != nil {
			return err
		}
		s.opts.Logger.Error("ledger: the last frame is complete but does not check, and no sound frame follows: moved to quarantine and cut",
			"block", next, "segment", filepath.Join(s.blockDir, segmentName(i)), "offset", off, "bytes", len(cut), "reason", cause,
			"quarantine", s.repair.Quarantine)
	} else if len(cut) > 0 {
		s.opts.Logger.Warn("ledger: cut a torn tail", "block", next, "segment", filepath.Join(s.blockDir, segmentName(i)),
			"offset", off, "bytes", len(cut), "reason", cause)
	}
	for j := i; j < len(segs); j++ {
		to := int64(0)
		if j == i {
			to = off
		}
		if err := segs[j].f.Truncate(to); err != nil {
			return fmt.Errorf("ledger: truncate segment %s to %d: %w", segmentName(j), to, err)
		}
		if j == i {
			s.repair.CutSegment, s.repair.CutOffset, s.repair.CutReason = segmentName(i), off, fmt.Sprintf("block %d: %v", next, cause)
		}
		s.repair.CutBytes += sizes[j] - to
		sizes[j] = to
	}
	return nil
}

// quarantine writes cut bytes to dir/quarantine/SEGMENT-OFFSET, durably.
func (s *BlockStore) quarantine(seg string, off int64, b []byte) error {
	dir := filepath.Join(s.dir, quarantineDir)
	path := filepath.Join(dir, fmt.Sprintf("%s-%d", seg, off))
	if err := writeFileSync(dir, path, b, !s.opts.NoSync); err != nil {
		return fmt.Errorf("ledger: quarantine %d bytes of %s at offset %d: %w", len(b), seg, off, err)
	}
	s.repair.Quarantine = path
	return nil
}

// writeFileSync writes path atomically (a temporary file renamed over
// it): after a crash it holds all of b or is absent.
func writeFileSync(dir, path string, b []byte, sync bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil && sync {
		err = syncDir(dir)
	}
	if err == nil && sync {
		err = syncDir(filepath.Dir(dir))
	}
	return err
}
