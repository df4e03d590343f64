package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/strand-ledger/strand/api"
	"google.golang.org/protobuf/proto"
)

// Entry is a validated block ready to store.
type Entry struct {
	Number     uint64
	HeaderHash []byte   // api.HeaderHash(header) of this block
	PrevHash   []byte   // header.PreviousHash
	Raw        []byte   // the encoded api.Block, metadata (validation codes) included
	TxIDs      []string // per transaction, in block order; "" where undecodable
	Codes      []byte   // per transaction, api.TxValidationCode as a byte
}

// Location is where a transaction was committed and with what code.
type Location struct {
	Block uint64
	Tx    uint32
	Code  api.TxValidationCode
}

// BlockStore is the append-only block store of one channel. See the
// package documentation for its invariants.
type BlockStore struct {
	dir      string
	blockDir string
	opts     Options
	idx      *index
	txs      *txFilter // every indexed tx id; set at open
	base     Base      // where the store starts; zero unless created from a snapshot
	repair   Repair

	// state is the published view readers use; the appender replaces it
	// after each successful Append.
	state atomic.Pointer[snapshot]

	// appendMu serializes Append and Close and guards w.
	appendMu sync.Mutex
	w        struct {
		segs    []*segment // as in the latest snapshot (copied on rollover)
		cur     *segment   // the segment being written: segs[len(segs)-1]
		size    int64      // bytes in cur
		buf     []byte     // frames not yet written
		index   *indexWriter
		lastErr error // sticky write or fsync failure
		dirty   bool  // cur holds frames written by AppendNoSync and not yet synced
	}

	// mu guards closed. Readers hold it shared for the length of a call so
	// that Close cannot close files and index under them.
	mu struct {
		sync.RWMutex
		closed bool
	}

	// dmg: the damaged blocks not yet replaced, and the replaced ones
	// (found at open, or by Replace). Readers consult it before the index.
	dmg struct {
		sync.Mutex
		damaged  map[uint64]Damage
		replaced map[uint64]bool
		any      atomic.Bool // either map is non-empty: readers skip the lock when not
	}

	metrics struct {
		appends, blocks, fsyncs, replaced atomic.Uint64
		fsyncNanos                        atomic.Int64
	}
}

// snapshot is an immutable view of the store: its height, last hash and
// where the last frame ends.
type snapshot struct {
	height  uint64
	hash    [api.HashSize]byte // header hash of block height-1
	segs    []*segment
	endSeg  int   // segment holding the end of the store
	endOff  int64 // offset in segs[endSeg] where the next frame goes
	sizeSum int64 // bytes in all segments before endSeg
}

// limit returns the end of the committed bytes in segment i of the view.
func (v *snapshot) limit(i int) int64 {
	if i == v.endSeg {
		return v.endOff
	}
	return v.segs[i].sealed
}

// OpenBlockStore opens (creating if needed) the block store in dir,
// repairing a torn tail and bringing the index up to date.
func OpenBlockStore(dir string, opts Options) (*BlockStore, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &BlockStore{dir: dir, blockDir: filepath.Join(dir, "blocks"), opts: opts}
	s.dmg.damaged, s.dmg.replaced = map[uint64]Damage{}, map[uint64]bool{}
	if err := os.MkdirAll(s.blockDir, 0o755); err != nil {
		return nil, fmt.Errorf("ledger: create %s: %w", s.blockDir, err)
	}
	base, err := readBase(dir)
	if err != nil {
		return nil, err
	}
	s.base = base
	idx, err := openIndex(filepath.Join(dir, "index"))
	if err != nil {
		return nil, err
	}
	s.idx = idx
	segs, err := openSegments(s.blockDir, !opts.NoSync)
	if err != nil {
		idx.close()
		return nil, err
	}
	s.w.index = newIndexWriter(idx)
	if err := s.recover(segs); err != nil {
		s.w.index.close()
		closeSegments(segs)
		idx.close()
		return nil, err
	}
	if s.txs, err = loadTxFilter(idx); err != nil {
		s.w.index.close()
		closeSegments(s.w.segs)
		idx.close()
		return nil, err
	}
	s.w.index.filter = s.txs
	return s, nil
}

// Height returns the number of blocks stored.
func (s *BlockStore) Height() uint64 { return s.state.Load().height }

// LastHash returns the header hash of the last block, nil if empty.
func (s *BlockStore) LastHash() []byte {
	v := s.state.Load()
	if v.height == 0 {
		return nil
	}
	return append([]byte(nil), v.hash[:]...)
}

// Append stores entries, which must continue the chain. It writes all
// frames, fsyncs once (unless Options.NoSync), indexes the blocks in one
// unsynced batch and then publishes them. A refused Append (ErrOutOfOrder,
// ErrChainBroken, invalid entry) writes nothing; a failed write or fsync
// makes every later Append fail (see the package documentation).
func (s *BlockStore) Append(entries []Entry) error { return s.append(entries, true) }

// AppendNoSync is Append without the fsync: the blocks are written,
// indexed and published, and become durable at the next Sync, Append or
// segment roll. A process crash loses none of them (the kernel holds the
// writes); a machine crash may lose a suffix of them, which Open cuts off
// as a torn tail. Only for callers that can recreate the blocks: a Raft
// orderer, whose fsynced log determines every block.
func (s *BlockStore) AppendNoSync(entries []Entry) error { return s.append(entries, false) }

// Sync makes every block appended so far durable.
func (s *BlockStore) Sync() error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if s.mu.closed {
		return fmt.Errorf("ledger: sync: %w", ErrClosed)
	}
	if s.w.lastErr != nil {
		return fmt.Errorf("ledger: sync refused after an earlier failure: %w", s.w.lastErr)
	}
	if !s.w.dirty {
		return nil
	}
	if err := s.syncLocked(s.w.cur); err != nil {
		s.w.lastErr = err
		return err
	}
	return nil
}

func (s *BlockStore) append(entries []Entry, sync bool) error {
	if len(entries) == 0 {
		return nil
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if s.mu.closed {
		return fmt.Errorf("ledger: append block %d: %w", entries[0].Number, ErrClosed)
	}
	if s.w.lastErr != nil {
		return fmt.Errorf("ledger: append block %d refused after an earlier failure: %w", entries[0].Number, s.w.lastErr)
	}
	v := s.state.Load()
	if err := checkEntries(v, entries); err != nil {
		return err
	}
	next, err := s.writeLocked(v, entries, sync)
	if err != nil {
		s.w.lastErr = err
		return err
	}
	s.state.Store(next)
	s.metrics.appends.Add(1)
	s.metrics.blocks.Add(uint64(len(entries)))
	return nil
}

// checkEntries checks that entries continue the chain of view v.
func checkEntries(v *snapshot, entries []Entry) error {
	want, prev := v.height, v.hash[:]
	for i := range entries {
		e := &entries[i]
		if e.Number != want {
			return fmt.Errorf("%w: got block %d, want %d (height %d)", ErrOutOfOrder, e.Number, want, v.height)
		}
		if want == 0 {
			if !allZero(e.PrevHash) {
				return fmt.Errorf("%w: block 0 has previous hash %s, want empty or zero", ErrChainBroken, shortHex(e.PrevHash))
			}
		} else if string(e.PrevHash) != string(prev) {
			return fmt.Errorf("%w: block %d has previous hash %s, but block %d has header hash %s",
				ErrChainBroken, e.Number, shortHex(e.PrevHash), want-1, shortHex(prev))
		}
		if len(e.HeaderHash) != api.HashSize {
			return fmt.Errorf("ledger: block %d: header hash is %d bytes, want %d", e.Number, len(e.HeaderHash), api.HashSize)
		}
		if len(e.Codes) != len(e.TxIDs) {
			return fmt.Errorf("ledger: block %d: %d tx ids but %d validation codes", e.Number, len(e.TxIDs), len(e.Codes))
		}
		if len(e.Raw) > maxRawSize {
			return fmt.Errorf("ledger: block %d: %d bytes, more than a frame holds (%d)", e.Number, len(e.Raw), maxRawSize)
		}
		if invariants {
			if err := checkEntryAgainstRaw(e); err != nil {
				panic(err)
			}
		}
		want, prev = want+1, e.HeaderHash
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// maxPending is how many frame bytes Append buffers before writing them.
const maxPending = 4 << 20

// writeLocked writes, syncs (if sync) and indexes entries and returns the
// view to publish. On failure it truncates what it wrote, best effort.
func (s *BlockStore) writeLocked(v *snapshot, entries []Entry, sync bool) (next *snapshot, err error) {
	startSegs, startSize := s.w.segs, s.w.size
	sizeSum := v.sizeSum
	defer func() {
		if err != nil {
			s.w.index.reset()
			s.w.buf = s.w.buf[:0]
			s.undoLocked(startSegs, startSize)
		}
	}()
	buf := s.w.buf[:0]
	for i := range entries {
		e := &entries[i]
		fsize := int64(frameHeaderSize + len(e.Raw))
		pending := s.w.size + int64(len(buf))
		if pending > 0 && pending+fsize > s.opts.SegmentSize {
			if buf, err = s.flushLocked(buf); err != nil {
				return nil, err
			}
			sizeSum += s.w.size
			if err := s.rollLocked(); err != nil {
				return nil, err
			}
		} else if len(buf) > 0 && len(buf)+int(fsize) > maxPending {
			if buf, err = s.flushLocked(buf); err != nil {
				return nil, err
			}
		}
		loc := blockLoc{seg: s.w.cur.num, off: s.w.size + int64(len(buf)), size: fsize}
		buf = appendFrame(buf, e.Number, e.Raw)
		if err := s.w.index.addBlock(e.Number, loc, e.TxIDs, e.Codes); err != nil {
			return nil, fmt.Errorf("ledger: index block %d: %w", e.Number, err)
		}
	}
	if buf, err = s.flushLocked(buf); err != nil {
		return nil, err
	}
	s.w.buf = buf
	if sync {
		if err := s.syncLocked(s.w.cur); err != nil {
			return nil, err
		}
	} else {
		s.w.dirty = true
	}
	last := &entries[len(entries)-1]
	if err := s.w.index.commit(indexMeta{block: last.Number, seg: s.w.cur.num, end: s.w.size}); err != nil {
		return nil, err
	}
	next = &snapshot{
		height:  last.Number + 1,
		segs:    s.w.segs,
		endSeg:  s.w.cur.num,
		endOff:  s.w.size,
		sizeSum: sizeSum,
	}
	copy(next.hash[:], last.HeaderHash)
	return next, nil
}

// flushLocked writes buf at the end of the current segment.
func (s *BlockStore) flushLocked(buf []byte) ([]byte, error) {
	if len(buf) == 0 {
		return buf, nil
	}
	if _, err := s.w.cur.f.WriteAt(buf, s.w.size); err != nil {
		return buf, fmt.Errorf("ledger: write segment %s at offset %d: %w", segmentName(s.w.cur.num), s.w.size, err)
	}
	s.w.size += int64(len(buf))
	return buf[:0], nil
}

func (s *BlockStore) syncLocked(seg *segment) error {
	if seg == s.w.cur {
		s.w.dirty = false
	}
	if s.opts.NoSync {
		return nil
	}
	start := nanotime()
	err := seg.f.Sync()
	s.metrics.fsyncNanos.Add(nanotime() - start)
	s.metrics.fsyncs.Add(1)
	if err != nil {
		return fmt.Errorf("ledger: fsync segment %s: %w", segmentName(seg.num), err)
	}
	return nil
}

// rollLocked seals the current segment (synced, so that only the last
// segment can ever hold a torn frame) and starts the next.
func (s *BlockStore) rollLocked() error {
	if err := s.syncLocked(s.w.cur); err != nil {
		return err
	}
	seg, err := createSegment(s.blockDir, s.w.cur.num+1, !s.opts.NoSync)
	if err != nil {
		return err
	}
	s.w.cur.sealed = s.w.size
	s.w.segs = append(s.w.segs[:len(s.w.segs):len(s.w.segs)], seg)
	s.w.cur, s.w.size = seg, 0
	return nil
}

// undoLocked removes what a failed Append wrote: segments it created and
// the bytes it added to the segment it started in. Best effort: the store
// refuses appends afterwards anyway, and Open repairs whatever is left.
func (s *BlockStore) undoLocked(segs []*segment, size int64) {
	for _, seg := range s.w.segs[len(segs):] {
		seg.f.Close()
		os.Remove(seg.path)
	}
	s.w.segs = segs
	s.w.cur = segs[len(segs)-1]
	s.w.size = size
	s.w.cur.f.Truncate(size)
}

// RawBlock returns the encoded block n.
func (s *BlockStore) RawBlock(n uint64) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mu.closed {
		return nil, fmt.Errorf("ledger: read block %d: %w", n, ErrClosed)
	}
	return s.rawBlockLocked(s.state.Load(), n)
}

// rawBlockLocked is RawBlock for a caller that holds s.mu shared.
func (s *BlockStore) rawBlockLocked(v *snapshot, n uint64) ([]byte, error) {
	if n >= v.height {
		return nil, fmt.Errorf("%w: block %d (height %d)", ErrNotFound, n, v.height)
	}
	if n < s.base.Height {
		return nil, s.beforeBase(n)
	}
	if d, ok := s.damage(n); ok {
		return nil, fmt.Errorf("%w: block %d is damaged (%s offset %d: %s) and not yet replaced", ErrCorrupt, n, d.Segment, d.Offset, d.Reason)
	}
	loc, ok, err := s.idx.blockLocation(n)
	if err != nil {
		return nil, fmt.Errorf("ledger: read block %d: %w", n, err)
	}
	if ok && loc.seg == replacedSeg {
		raw, _, err := s.readReplacement(n, loc.size)
		return raw, err
	}
	if !ok || loc.seg > v.endSeg || loc.off+loc.size > v.limit(loc.seg) {
		return nil, fmt.Errorf("%w: block %d is below the height %d but its index entry is missing or out of range (%+v)", ErrCorrupt, n, v.height, loc)
	}
	num, raw, err := readSizedFrameAt(v.segs[loc.seg].f, loc.off, loc.size)
	if err != nil {
		return nil, fmt.Errorf("%w: block %d in segment %s: %v", ErrCorrupt, n, segmentName(loc.seg), err)
	}
	if num != n {
		return nil, fmt.Errorf("%w: block %d: frame at segment %s offset %d holds block %d", ErrCorrupt, n, segmentName(loc.seg), loc.off, num)
	}
	return raw, nil
}

// beforeBase is the error for block n below the base.
func (s *BlockStore) beforeBase(n uint64) error {
	return fmt.Errorf("%w: block %d: this ledger starts at block %d, from a snapshot; blocks below it are not stored here",
		ErrBeforeBase, n, s.base.Height)
}

// Block returns block n, decoded.
func (s *BlockStore) Block(n uint64) (*api.Block, error) {
	raw, err := s.RawBlock(n)
	if err != nil {
		return nil, err
	}
	b := new(api.Block)
	if err := proto.Unmarshal(raw, b); err != nil {
		return nil, fmt.Errorf("%w: block %d does not decode: %v", ErrCorrupt, n, err)
	}
	return b, nil
}

// TxLocation returns where the transaction with id txID was committed.
func (s *BlockStore) TxLocation(txID string) (Location, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mu.closed {
		return Location{}, false, fmt.Errorf("ledger: look up tx %q: %w", txID, ErrClosed)
	}
	if txID == "" {
		return Location{}, false, nil
	}
	h := s.state.Load().height
	if !s.txs.mayHave(txID) {
		return Location{}, false, nil
	}
	loc, ok, err := s.idx.txLocation(txID)
	if err != nil || !ok {
		return Location{}, false, err
	}
	if loc.Block >= h {
		// Indexed by an Append that has not published yet.
		return Location{}, false, nil
	}
	return loc, true, nil
}

// Close closes the store. It waits for a running Append; later calls of
// any method return ErrClosed. Closing twice returns nil.
func (s *BlockStore) Close() error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil
	}
	s.mu.closed = true
	var syncErr error
	if s.w.dirty && s.w.lastErr == nil { // a clean close leaves everything durable
		syncErr = s.syncLocked(s.w.cur)
	}
	s.w.index.close()
	return errors.Join(syncErr, closeSegments(s.w.segs), s.idx.close())
}
