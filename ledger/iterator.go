package ledger

import (
	"fmt"
	"io"
)

// Iterator reads blocks in order from a starting number. It reads the
// segment files sequentially and uses the index only to find its first
// block. An Iterator is for one goroutine; any number of them may run
// beside each other and beside Append.
type Iterator struct {
	s          *BlockStore
	next       uint64
	seg        int
	off        int64
	positioned bool
	closed     bool
}

// Iterator returns an iterator that starts at block from. from may be at
// or past the height: Next then returns io.EOF until the block is stored.
func (s *BlockStore) Iterator(from uint64) *Iterator {
	return &Iterator{s: s, next: from}
}

// Next returns the next block's number and raw bytes (owned by the
// caller). At the current end of the store it returns io.EOF; calling
// again after more appends continues where it stopped.
func (it *Iterator) Next() (number uint64, raw []byte, err error) {
	if it.closed {
		return 0, nil, fmt.Errorf("ledger: iterator at block %d: %w", it.next, ErrClosed)
	}
	s := it.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mu.closed {
		return 0, nil, fmt.Errorf("ledger: iterator at block %d: %w", it.next, ErrClosed)
	}
	v := s.state.Load()
	if it.next >= v.height {
		return 0, nil, io.EOF
	}
	if it.next < s.base.Height {
		return 0, nil, s.beforeBase(it.next)
	}
	if s.irregular(it.next) {
		// A damaged or replaced block: read it through the index, and
		// find the next block through the index too, since the segment
		// bytes after this one's are not a frame to step over.
		raw, err := s.rawBlockLocked(v, it.next)
		if err != nil {
			return 0, nil, fmt.Errorf("ledger: iterator at block %d: %w", it.next, err)
		}
		it.next++
		it.positioned = false
		return it.next - 1, raw, nil
	}
	if !it.positioned {
		loc, ok, err := s.idx.blockLocation(it.next)
		if err != nil {
			return 0, nil, fmt.Errorf("ledger: iterator at block %d: %w", it.next, err)
		}
		if !ok || loc.seg > v.endSeg {
			return 0, nil, fmt.Errorf("%w: block %d is below the height %d but has no valid index entry", ErrCorrupt, it.next, v.height)
		}
		it.seg, it.off, it.positioned = loc.seg, loc.off, true
	}
	for it.seg < v.endSeg && it.off >= v.limit(it.seg) {
		it.seg, it.off = it.seg+1, 0
	}
	num, raw, size, err := readFrameAt(v.segs[it.seg].f, it.off, v.limit(it.seg))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: block %d in segment %s: %v", ErrCorrupt, it.next, segmentName(it.seg), err)
	}
	if num != it.next {
		return 0, nil, fmt.Errorf("%w: iterator wants block %d, segment %s offset %d holds block %d",
			ErrCorrupt, it.next, segmentName(it.seg), it.off, num)
	}
	it.off += size
	it.next++
	return num, raw, nil
}

// Close releases the iterator; Next then returns ErrClosed.
func (it *Iterator) Close() error {
	it.closed = true
	return nil
}
