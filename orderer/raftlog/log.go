package raftlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/internal/latency"
)

// FileName is the name of the log file inside the directory.
const FileName = "raft.wal"

// Frame types.
const (
	typeEntry     byte = 1
	typeHardState byte = 2
	typeSnapshot  byte = 3
	// typeCompacted marks a snapshot taken locally over entries the log
	// still holds (Compact): replay records it with CreateSnapshot and
	// keeps the entries after the base snapshot.
	typeCompacted byte = 4
)

const (
	frameHeader = 9        // length, crc, type
	maxFrame    = 64 << 20 // a frame larger than this is corruption, not data
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sentinel errors, checked with errors.Is.
var (
	// ErrCorrupt: the file holds frames that are intact but do not form
	// a Raft log (an entry that leaves a gap, an undecodable payload).
	ErrCorrupt = errors.New("raftlog: corrupt")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("raftlog: closed")
)

// Repair says what Open cut from a torn tail.
type Repair struct {
	TruncatedAt int64  // file offset of the first bad frame; -1 if none
	Dropped     int64  // bytes dropped from there to the end
	Reason      string // why the frame was bad
}

// Stats counts the log's I/O since Open.
type Stats struct {
	Saves      uint64        `metric:"counter"` // Raft log saves that wrote something.
	Fsyncs     uint64        `metric:"counter"` // Raft log fsyncs (of saves and compactions).
	FsyncTotal time.Duration `metric:"counter"` // Time spent in Raft log fsyncs.
	FsyncMax   time.Duration `metric:"gauge"`   // The slowest Raft log fsync.
	Bytes      uint64        `metric:"counter"` // Bytes written to the Raft log.
	Compacts   uint64        `metric:"counter"` // Raft log compactions that rewrote the file.
	Size       int64         `metric:"gauge"`   // The Raft log file's size now.
	// Distribution of the Raft log's fsync latencies.
	Fsync latency.Snapshot
}

// String renders the stats on one line.
func (s Stats) String() string {
	var avg time.Duration
	if s.Fsyncs > 0 {
		avg = s.FsyncTotal / time.Duration(s.Fsyncs)
	}
	return fmt.Sprintf("%d saves, %d fsyncs (avg %s, p99 ≤%s, max %s), %d bytes written, %d compactions, file %d bytes",
		s.Saves, s.Fsyncs, avg, s.Fsync.Quantile(0.99), s.FsyncMax, s.Bytes, s.Compacts, s.Size)
}

// Log is the durable Raft storage in one directory. See the package
// documentation.
type Log struct {
	dir    string
	f      *os.File
	size   int64
	mem    *raft.MemoryStorage
	buf    []byte
	closed bool
	// empty is true when Open found nothing: the node must bootstrap.
	empty bool

	saves, fsyncs, bytes, compacts atomic.Uint64
	fsyncNanos, fsyncMax, sizeNow  atomic.Int64
	fsyncHist                      latency.Histogram
}

// Open opens (or creates) the log in dir and replays it. A torn tail is
// truncated and reported in Repair.
func Open(dir string) (*Log, Repair, error) {
	rep := Repair{TruncatedAt: -1}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, rep, fmt.Errorf("raftlog: create directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
	os.Remove(path + ".tmp") // a Compact that crashed before its rename
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, rep, fmt.Errorf("raftlog: open %s: %w", path, err)
	}
	l := &Log{dir: dir, f: f, mem: raft.NewMemoryStorage()}
	frames, good, why, err := l.replay()
	if err != nil {
		f.Close()
		return nil, rep, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, rep, fmt.Errorf("raftlog: stat %s: %w", path, err)
	}
	if good < st.Size() {
		rep = Repair{TruncatedAt: good, Dropped: st.Size() - good, Reason: why}
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, rep, fmt.Errorf("raftlog: truncate the torn tail of %s at %d: %w", path, good, err)
		}
		if err := l.sync(); err != nil {
			f.Close()
			return nil, rep, err
		}
	}
	l.size = good
	l.sizeNow.Store(good)
	l.empty = frames == 0
	return l, rep, nil
}

// replay reads every intact frame into the memory storage and returns the
// number of frames, the offset after the last good one and, if it
// stopped early, why.
func (l *Log) replay() (frames int, good int64, why string, err error) {
	r := bufio.NewReaderSize(l.f, 1<<20)
	var hdr [frameHeader]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return frames, good, "", nil
			}
			return frames, good, "incomplete frame header", nil
		}
		n := binary.BigEndian.Uint32(hdr[0:4])
		if n < 1 || n > maxFrame {
			return frames, good, fmt.Sprintf("frame length %d out of range", n), nil
		}
		body := make([]byte, n-1)
		if _, err := io.ReadFull(r, body); err != nil {
			return frames, good, fmt.Sprintf("frame of %d bytes cut short", n), nil
		}
		crc := crc32.Update(crc32.Checksum(hdr[8:9], castagnoli), castagnoli, body)
		if crc != binary.BigEndian.Uint32(hdr[4:8]) {
			return frames, good, "checksum mismatch", nil
		}
		if err := l.load(hdr[8], body, good); err != nil {
			return frames, good, "", err
		}
		frames++
		good += int64(frameHeader) + int64(n) - 1
	}
}

// load applies one intact frame to the memory storage.
func (l *Log) load(typ byte, body []byte, off int64) error {
	switch typ {
	case typeEntry:
		e := &pb.Entry{}
		if err := proto.Unmarshal(body, e); err != nil {
			return fmt.Errorf("%w: entry frame at offset %d: %v", ErrCorrupt, off, err)
		}
		return l.appendMem([]*pb.Entry{e}, off)
	case typeHardState:
		hs := &pb.HardState{}
		if err := proto.Unmarshal(body, hs); err != nil {
			return fmt.Errorf("%w: hard-state frame at offset %d: %v", ErrCorrupt, off, err)
		}
		return l.mem.SetHardState(hs)
	case typeSnapshot:
		s := &pb.Snapshot{}
		if err := proto.Unmarshal(body, s); err != nil {
			return fmt.Errorf("%w: snapshot frame at offset %d: %v", ErrCorrupt, off, err)
		}
		if err := l.mem.ApplySnapshot(s); err != nil && !errors.Is(err, raft.ErrSnapOutOfDate) {
			return fmt.Errorf("%w: snapshot frame at offset %d: %v", ErrCorrupt, off, err)
		}
		return nil
	case typeCompacted:
		s := &pb.Snapshot{}
		if err := proto.Unmarshal(body, s); err != nil {
			return fmt.Errorf("%w: compaction frame at offset %d: %v", ErrCorrupt, off, err)
		}
		md := s.GetMetadata()
		if last, _ := l.mem.LastIndex(); md.GetIndex() > last {
			return fmt.Errorf("%w: compaction frame at offset %d: index %d beyond the last entry %d", ErrCorrupt, off, md.GetIndex(), last)
		}
		if _, err := l.mem.CreateSnapshot(md.GetIndex(), md.GetConfState(), s.GetData()); err != nil && !errors.Is(err, raft.ErrSnapOutOfDate) {
			return fmt.Errorf("%w: compaction frame at offset %d: %v", ErrCorrupt, off, err)
		}
		return nil
	}
	return fmt.Errorf("%w: frame at offset %d has type %d, want 1 to 4", ErrCorrupt, off, typ)
}

// appendMem appends entries to the memory storage after checking that
// they leave no gap (MemoryStorage.Append panics on one).
func (l *Log) appendMem(ents []*pb.Entry, off int64) error {
	if len(ents) == 0 {
		return nil
	}
	first, _ := l.mem.FirstIndex()
	last, _ := l.mem.LastIndex()
	for i, e := range ents {
		if i > 0 && e.GetIndex() != ents[i-1].GetIndex()+1 {
			return fmt.Errorf("%w: entries at offset %d: index %d follows %d", ErrCorrupt, off, e.GetIndex(), ents[i-1].GetIndex())
		}
	}
	if idx := ents[0].GetIndex(); idx > last+1 || idx == 0 {
		return fmt.Errorf("%w: entry at offset %d has index %d, want at most %d (first %d)", ErrCorrupt, off, idx, last+1, first)
	}
	return l.mem.Append(ents)
}

// Empty reports whether Open found no state at all: the node is new and
// must bootstrap its Raft group.
func (l *Log) Empty() bool { return l.empty }

// Storage is what raft.Config.Storage needs: read-only, and always
// durable (see the invariants).
func (l *Log) Storage() raft.Storage { return l.mem }

// Snapshot returns the latest snapshot (the zero one if none).
func (l *Log) Snapshot() *pb.Snapshot {
	s, _ := l.mem.Snapshot()
	return s
}

// Save durably appends what a raft.Ready asks to persist: the snapshot
// first, then the entries, then the hard state, with one fsync. Only then
// does it update Storage. hs and snap may be nil or empty.
func (l *Log) Save(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot) error {
	if l.closed {
		return ErrClosed
	}
	hasSnap := !raft.IsEmptySnap(snap)
	hasHS := !raft.IsEmptyHardState(hs)
	if !hasSnap && !hasHS && len(ents) == 0 {
		return nil
	}
	buf := l.buf[:0]
	var err error
	if hasSnap {
		if buf, err = appendFrame(buf, typeSnapshot, snap); err != nil {
			return err
		}
	}
	for _, e := range ents {
		if buf, err = appendFrame(buf, typeEntry, e); err != nil {
			return err
		}
	}
	if hasHS {
		if buf, err = appendFrame(buf, typeHardState, hs); err != nil {
			return err
		}
	}
	l.buf = buf
	if _, err := l.f.WriteAt(buf, l.size); err != nil {
		return fmt.Errorf("raftlog: write %d bytes at %d: %w", len(buf), l.size, err)
	}
	if err := l.sync(); err != nil {
		return err
	}
	l.size += int64(len(buf))
	l.sizeNow.Store(l.size)
	l.saves.Add(1)
	l.bytes.Add(uint64(len(buf)))
	// Durable: now raft may see it.
	if hasSnap {
		if err := l.mem.ApplySnapshot(snap); err != nil && !errors.Is(err, raft.ErrSnapOutOfDate) {
			return fmt.Errorf("raftlog: apply snapshot at index %d: %w", snap.GetMetadata().GetIndex(), err)
		}
	}
	if err := l.appendMem(ents, l.size); err != nil {
		return err
	}
	if hasHS {
		return l.mem.SetHardState(hs)
	}
	return nil
}

// appendFrame appends the frame of m to buf.
func appendFrame(buf []byte, typ byte, m proto.Message) ([]byte, error) {
	start := len(buf)
	buf = append(buf, make([]byte, frameHeader)...)
	buf, err := proto.MarshalOptions{}.MarshalAppend(buf, m)
	if err != nil {
		return buf[:start], fmt.Errorf("raftlog: encode frame type %d: %w", typ, err)
	}
	n := len(buf) - start - frameHeader + 1
	if n > maxFrame {
		return buf[:start], fmt.Errorf("raftlog: frame type %d of %d bytes, more than %d", typ, n, maxFrame)
	}
	buf[start+8] = typ
	binary.BigEndian.PutUint32(buf[start:], uint32(n))
	binary.BigEndian.PutUint32(buf[start+4:], crc32.Checksum(buf[start+8:], castagnoli))
	return buf, nil
}

// Compact records a snapshot at index (which must be applied, and at or
// below the last index) holding data, and drops the log up to
// index-keep, so that a follower up to keep entries behind still gets
// entries rather than the snapshot. The file is rewritten (see the
// package documentation). An index at or below the current snapshot's
// does nothing.
func (l *Log) Compact(index uint64, cs *pb.ConfState, data []byte, keep uint64) error {
	if l.closed {
		return ErrClosed
	}
	if index <= l.Snapshot().GetMetadata().GetIndex() {
		return nil
	}
	snap, err := l.mem.CreateSnapshot(index, cs, data)
	if err != nil {
		return fmt.Errorf("raftlog: snapshot at index %d: %w", index, err)
	}
	if index > keep {
		if err := l.mem.Compact(index - keep); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return fmt.Errorf("raftlog: compact to index %d: %w", index-keep, err)
		}
	}
	return l.rewrite(snap)
}

// rewrite writes a new file and renames it over the old one: a base
// snapshot frame just before the first kept entry (so replay can append
// them), the kept entries, snap as a compaction frame, and the hard state.
func (l *Log) rewrite(snap *pb.Snapshot) error {
	hs, _, _ := l.mem.InitialState()
	first, _ := l.mem.FirstIndex()
	last, _ := l.mem.LastIndex()
	var ents []*pb.Entry
	if last >= first {
		var err error
		if ents, err = l.mem.Entries(first, last+1, ^uint64(0)); err != nil {
			return fmt.Errorf("raftlog: read entries %d..%d: %w", first, last, err)
		}
	}
	var buf []byte
	if first > 1 { // entries were compacted before: replay needs their base
		baseTerm, err := l.mem.Term(first - 1)
		if err != nil {
			return fmt.Errorf("raftlog: term of index %d: %w", first-1, err)
		}
		base := &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(first - 1), Term: proto.Uint64(baseTerm),
			ConfState: snap.GetMetadata().GetConfState()}}
		if buf, err = appendFrame(buf, typeSnapshot, base); err != nil {
			return err
		}
	}
	var err error
	for _, e := range ents {
		if buf, err = appendFrame(buf, typeEntry, e); err != nil {
			return err
		}
	}
	if buf, err = appendFrame(buf, typeCompacted, snap); err != nil {
		return err
	}
	if !raft.IsEmptyHardState(hs) {
		if buf, err = appendFrame(buf, typeHardState, hs); err != nil {
			return err
		}
	}
	path := filepath.Join(l.dir, FileName)
	tmp, err := os.OpenFile(path+".tmp", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("raftlog: compact: %w", err)
	}
	old := l.f
	l.f = tmp
	if _, err := tmp.Write(buf); err != nil {
		l.f = old
		tmp.Close()
		return fmt.Errorf("raftlog: compact: write: %w", err)
	}
	if err := l.sync(); err != nil {
		l.f = old
		tmp.Close()
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		l.f = old
		tmp.Close()
		return fmt.Errorf("raftlog: compact: rename: %w", err)
	}
	old.Close()
	if err := syncDir(l.dir); err != nil {
		return err
	}
	l.size = int64(len(buf))
	l.sizeNow.Store(l.size)
	l.bytes.Add(uint64(len(buf)))
	l.compacts.Add(1)
	return nil
}

// sync fsyncs the file and records the latency.
func (l *Log) sync() error {
	start := time.Now()
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("raftlog: fsync %s: %w", l.f.Name(), err)
	}
	took := time.Since(start)
	d := int64(took)
	l.fsyncHist.Record(took)
	l.fsyncs.Add(1)
	l.fsyncNanos.Add(d)
	for {
		m := l.fsyncMax.Load()
		if d <= m || l.fsyncMax.CompareAndSwap(m, d) {
			break
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("raftlog: open directory to fsync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("raftlog: fsync directory %s: %w", dir, err)
	}
	return nil
}

// Stats returns the I/O counters; safe from any goroutine.
func (l *Log) Stats() Stats {
	return Stats{
		Saves: l.saves.Load(), Fsyncs: l.fsyncs.Load(), Bytes: l.bytes.Load(), Compacts: l.compacts.Load(),
		FsyncTotal: time.Duration(l.fsyncNanos.Load()), FsyncMax: time.Duration(l.fsyncMax.Load()), Size: l.sizeNow.Load(),
		Fsync: l.fsyncHist.Snapshot(),
	}
}

// Close closes the file. Later calls do nothing.
func (l *Log) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	return l.f.Close()
}
