package ledger

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// frameHeaderSize is the length, CRC and block number in front of a block.
const frameHeaderSize = 16

// maxRawSize is the largest raw block a frame can hold: the length field
// is 32 bits and counts the 8-byte block number.
const maxRawSize = math.MaxUint32 - 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segment is one segment file. f is used with ReadAt by readers and with
// WriteAt by the appender only.
type segment struct {
	num  int
	path string
	f    *os.File
	// sealed is the final size of a segment that is no longer written. The
	// appender sets it before it publishes a snapshot whose end lies in a
	// later segment, and readers read it only through such a snapshot.
	sealed int64
}

func segmentName(num int) string { return fmt.Sprintf("%06d.seg", num) }

// parseSegmentName returns the number of a file named like 000042.seg.
func parseSegmentName(name string) (int, bool) {
	base, ok := strings.CutSuffix(name, ".seg")
	if !ok || len(base) < 6 {
		return 0, false
	}
	n, err := strconv.Atoi(base)
	if err != nil || n < 0 || segmentName(n) != name {
		return 0, false
	}
	return n, true
}

// openSegments opens every segment in dir for reading and writing. The
// segments must be numbered 0, 1, 2, ... without gaps; an empty directory
// gets a fresh segment 0.
func openSegments(dir string, sync bool) ([]*segment, error) {
	segs, err := openSegmentFiles(dir, os.O_RDWR)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		seg, err := createSegment(dir, 0, sync)
		if err != nil {
			return nil, err
		}
		segs = append(segs, seg)
	}
	return segs, nil
}

// openSegmentFiles opens the segments of dir, numbered 0, 1, 2, ...
// without gaps, with flag (os.O_RDWR, or os.O_RDONLY to only read them).
func openSegmentFiles(dir string, flag int) ([]*segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ledger: list segments: %w", err)
	}
	var nums []int
	for _, e := range ents {
		if n, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	var segs []*segment
	for i, n := range nums {
		if n != i {
			closeSegments(segs)
			return nil, fmt.Errorf("%w: segment %s is missing (found %s after it)", ErrCorrupt, segmentName(i), segmentName(n))
		}
		path := filepath.Join(dir, segmentName(n))
		f, err := os.OpenFile(path, flag, 0)
		if err != nil {
			closeSegments(segs)
			return nil, fmt.Errorf("ledger: open segment: %w", err)
		}
		segs = append(segs, &segment{num: n, path: path, f: f})
	}
	return segs, nil
}

// createSegment creates an empty segment file and, with sync, makes its
// directory entry durable.
func createSegment(dir string, num int, sync bool) (*segment, error) {
	path := filepath.Join(dir, segmentName(num))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ledger: create segment: %w", err)
	}
	if sync {
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &segment{num: num, path: path, f: f}, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("ledger: sync directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ledger: sync directory %s: %w", dir, err)
	}
	return nil
}

func closeSegments(segs []*segment) error {
	var errs []error
	for _, s := range segs {
		if err := s.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("ledger: close segment %s: %w", segmentName(s.num), err))
		}
	}
	return errors.Join(errs...)
}

// appendFrame appends the frame of block number to buf.
func appendFrame(buf []byte, number uint64, raw []byte) []byte {
	start := len(buf)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(8+len(raw)))
	buf = binary.LittleEndian.AppendUint32(buf, 0) // CRC, below
	buf = binary.LittleEndian.AppendUint64(buf, number)
	buf = append(buf, raw...)
	crc := crc32.Checksum(buf[start+8:], castagnoli)
	binary.LittleEndian.PutUint32(buf[start+4:], crc)
	return buf
}

// frameError says why the bytes at an offset are not a valid frame.
type frameError struct {
	off    int64
	reason string
	// incomplete: the segment ends inside the frame (a short header, or a
	// length that runs past the end): what a torn write leaves.
	incomplete bool
}

func (e *frameError) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.reason) }

// checkHeader validates a frame header found at off with avail bytes of
// the segment from off on, and returns the frame's total size.
func checkHeader(hdr []byte, off, avail int64) (size int64, err error) {
	n := int64(binary.LittleEndian.Uint32(hdr[0:4]))
	switch {
	case n < 8:
		return 0, &frameError{off, fmt.Sprintf("frame length %d is shorter than a block number", n), false}
	case frameHeaderSize-8+n > avail:
		return 0, &frameError{off, fmt.Sprintf("frame length %d runs past the end of the segment (%d bytes left)", n, avail-8), true}
	}
	return 8 + n, nil
}

// checkCRC verifies a whole frame (header included).
func checkCRC(frame []byte, off int64) error {
	want := binary.LittleEndian.Uint32(frame[4:8])
	if got := crc32.Checksum(frame[8:], castagnoli); got != want {
		return &frameError{off, fmt.Sprintf("checksum mismatch: stored %08x, computed %08x", want, got), false}
	}
	return nil
}

// readFrameAt reads the frame at off, which must end at or before limit,
// and returns its block number, a fresh copy of its raw bytes and its size.
func readFrameAt(f io.ReaderAt, off, limit int64) (number uint64, raw []byte, size int64, err error) {
	if limit-off < frameHeaderSize {
		return 0, nil, 0, &frameError{off, fmt.Sprintf("incomplete frame header (%d bytes left)", limit-off), true}
	}
	var hdr [frameHeaderSize]byte
	if _, err := f.ReadAt(hdr[:], off); err != nil {
		return 0, nil, 0, fmt.Errorf("offset %d: read frame header: %w", off, err)
	}
	if size, err = checkHeader(hdr[:], off, limit-off); err != nil {
		return 0, nil, 0, err
	}
	frame := make([]byte, size)
	copy(frame, hdr[:])
	if _, err := f.ReadAt(frame[frameHeaderSize:], off+frameHeaderSize); err != nil {
		return 0, nil, 0, fmt.Errorf("offset %d: read frame: %w", off, err)
	}
	if err := checkCRC(frame, off); err != nil {
		return 0, nil, 0, err
	}
	return binary.LittleEndian.Uint64(hdr[8:16]), frame[frameHeaderSize:], size, nil
}

// readSizedFrameAt reads a frame whose size the index gave, in one read.
func readSizedFrameAt(f io.ReaderAt, off, size int64) (number uint64, raw []byte, err error) {
	if size < frameHeaderSize || size-8 > math.MaxUint32 {
		return 0, nil, &frameError{off, fmt.Sprintf("indexed frame size %d is impossible", size), false}
	}
	frame := make([]byte, size)
	if _, err := f.ReadAt(frame, off); err != nil {
		return 0, nil, fmt.Errorf("offset %d: read frame: %w", off, err)
	}
	if got := int64(binary.LittleEndian.Uint32(frame[0:4])) + 8; got != size {
		return 0, nil, &frameError{off, fmt.Sprintf("frame size %d, index says %d", got, size), false}
	}
	if err := checkCRC(frame, off); err != nil {
		return 0, nil, err
	}
	return binary.LittleEndian.Uint64(frame[8:16]), frame[frameHeaderSize:], nil
}

// frameScanner reads the frames of one segment in order, for recovery.
type frameScanner struct {
	r    *bufio.Reader
	off  int64 // offset of the next frame
	size int64 // size of the segment file
	buf  []byte
}

func newFrameScanner(f *os.File, off, size int64) *frameScanner {
	return &frameScanner{
		r:    bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 1<<20),
		off:  off,
		size: size,
	}
}

// next returns the next frame's block number and raw bytes (valid until
// the following call) and advances. It returns io.EOF at a clean end, a
// *frameError at a bad frame, and other errors for failed reads.
func (sc *frameScanner) next() (number uint64, raw []byte, err error) {
	avail := sc.size - sc.off
	if avail == 0 {
		return 0, nil, io.EOF
	}
	if avail < frameHeaderSize {
		return 0, nil, &frameError{sc.off, fmt.Sprintf("incomplete frame header (%d bytes left)", avail), true}
	}
	var hdr [frameHeaderSize]byte
	if _, err := io.ReadFull(sc.r, hdr[:]); err != nil {
		return 0, nil, fmt.Errorf("offset %d: read frame header: %w", sc.off, err)
	}
	size, err := checkHeader(hdr[:], sc.off, avail)
	if err != nil {
		return 0, nil, err
	}
	if int64(cap(sc.buf)) < size {
		sc.buf = make([]byte, size)
	}
	frame := sc.buf[:size]
	copy(frame, hdr[:])
	if _, err := io.ReadFull(sc.r, frame[frameHeaderSize:]); err != nil {
		return 0, nil, fmt.Errorf("offset %d: read frame: %w", sc.off, err)
	}
	if err := checkCRC(frame, sc.off); err != nil {
		return 0, nil, err
	}
	sc.off += size
	return binary.LittleEndian.Uint64(hdr[8:16]), frame[frameHeaderSize:], nil
}
