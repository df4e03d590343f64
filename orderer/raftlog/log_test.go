package raftlog

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func ent(term, index uint64, data string) *pb.Entry {
	return &pb.Entry{Term: proto.Uint64(term), Index: proto.Uint64(index), Data: []byte(data)}
}

func hs(term, vote, commit uint64) *pb.HardState {
	return &pb.HardState{Term: proto.Uint64(term), Vote: proto.Uint64(vote), Commit: proto.Uint64(commit)}
}

func open(t *testing.T, dir string) (*Log, Repair) {
	t.Helper()
	l, rep, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, rep
}

// state returns the hard state and the entries' data, index order.
func state(t *testing.T, l *Log) (*pb.HardState, []string) {
	t.Helper()
	st, _, err := l.Storage().InitialState()
	if err != nil {
		t.Fatal(err)
	}
	first, _ := l.Storage().FirstIndex()
	last, _ := l.Storage().LastIndex()
	var out []string
	if last >= first {
		es, err := l.Storage().Entries(first, last+1, ^uint64(0))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			out = append(out, string(e.Data))
		}
	}
	return st, out
}

func TestReopenReplaysAndTruncatesConflicts(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir)
	if !l.Empty() {
		t.Fatal("fresh log not empty")
	}
	must(t, l.Save(hs(1, 1, 0), []*pb.Entry{ent(1, 1, "a"), ent(1, 2, "b"), ent(1, 3, "c")}, nil))
	// A new leader overwrites index 3 and appends 4.
	must(t, l.Save(hs(2, 2, 3), []*pb.Entry{ent(2, 3, "C"), ent(2, 4, "D")}, nil))
	l.Close()

	l2, rep := open(t, dir)
	if rep.TruncatedAt != -1 || l2.Empty() {
		t.Fatalf("repair %+v, empty %v on a clean log", rep, l2.Empty())
	}
	st, data := state(t, l2)
	if st.GetTerm() != 2 || st.GetVote() != 2 || st.GetCommit() != 3 {
		t.Fatalf("hard state %v, want term 2 vote 2 commit 3", st)
	}
	if want := []string{"a", "b", "C", "D"}; !slices.Equal(data, want) {
		t.Fatalf("entries %q, want %q", data, want)
	}
}

func TestTornTailIsTruncated(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir)
	must(t, l.Save(hs(1, 1, 1), []*pb.Entry{ent(1, 1, "a")}, nil))
	good := l.Stats().Size
	must(t, l.Save(hs(1, 1, 2), []*pb.Entry{ent(1, 2, "bbbbbbbbbbbbbbbb")}, nil))
	l.Close()
	path := filepath.Join(dir, FileName)
	for _, c := range []struct {
		name string
		cut  func([]byte) []byte
	}{
		{"cut in the middle of a frame", func(b []byte) []byte { return b[:len(b)-5] }},
		{"flipped byte in the last frame", func(b []byte) []byte { b[len(b)-2] ^= 0xff; return b }},
		{"zeros appended", func(b []byte) []byte { return append(b, make([]byte, 100)...) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			raw, err := os.ReadFile(path)
			must(t, err)
			must(t, os.WriteFile(filepath.Join(d, FileName), c.cut(raw), 0o644))
			l, rep := open(t, d)
			if rep.TruncatedAt < good || rep.Dropped == 0 {
				t.Fatalf("repair %+v, want a cut at or after %d", rep, good)
			}
			st, data := state(t, l)
			if len(data) < 1 || data[0] != "a" || st.GetTerm() != 1 {
				t.Fatalf("after repair: %v %q", st, data)
			}
			// Appending after the repair works and survives a reopen.
			last, _ := l.Storage().LastIndex()
			must(t, l.Save(nil, []*pb.Entry{ent(1, last+1, "z")}, nil))
			l.Close()
			l2, rep2 := open(t, d)
			if rep2.TruncatedAt != -1 {
				t.Fatalf("second open repaired again: %+v", rep2)
			}
			if _, data := state(t, l2); data[len(data)-1] != "z" {
				t.Fatalf("entries after reopen %q", data)
			}
		})
	}
}

func TestCompactKeepsTailAndSnapshot(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir)
	var es []*pb.Entry
	for i := uint64(1); i <= 20; i++ {
		es = append(es, ent(3, i, string(rune('a'+i-1))))
	}
	must(t, l.Save(hs(3, 1, 20), es, nil))
	cs := &pb.ConfState{Voters: []uint64{1, 2, 3}}
	must(t, l.Compact(15, cs, []byte("height=7"), 5))
	must(t, l.Compact(12, cs, []byte("older"), 5)) // at or below the snapshot: no-op
	l.Close()

	l2, _ := open(t, dir)
	s := l2.Snapshot()
	if s.GetMetadata().GetIndex() != 15 || string(s.GetData()) != "height=7" || len(s.GetMetadata().GetConfState().GetVoters()) != 3 {
		t.Fatalf("snapshot %v", s)
	}
	first, _ := l2.Storage().FirstIndex()
	if first != 11 {
		t.Fatalf("first index %d, want 11 (15 - 5 + 1)", first)
	}
	st, data := state(t, l2)
	if st.GetCommit() != 20 || len(data) != 10 || data[9] != "t" {
		t.Fatalf("after compaction: %v %q", st, data)
	}
	if l2.Stats().Compacts != 0 || l.Stats().Compacts != 1 {
		t.Fatalf("compact counters: %d, %d", l.Stats().Compacts, l2.Stats().Compacts)
	}
}

func TestSnapshotFromLeaderReplacesLog(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir)
	must(t, l.Save(hs(1, 1, 2), []*pb.Entry{ent(1, 1, "a"), ent(1, 2, "b")}, nil))
	snap := &pb.Snapshot{Data: []byte("s"), Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(50), Term: proto.Uint64(4),
		ConfState: &pb.ConfState{Voters: []uint64{1, 2, 3}}}}
	must(t, l.Save(hs(4, 0, 50), nil, snap))
	must(t, l.Save(nil, []*pb.Entry{ent(4, 51, "x")}, nil))
	l.Close()
	l2, _ := open(t, dir)
	if got := l2.Snapshot().GetMetadata().GetIndex(); got != 50 {
		t.Fatalf("snapshot index %d, want 50", got)
	}
	if _, data := state(t, l2); !slices.Equal(data, []string{"x"}) {
		t.Fatalf("entries %q, want [x]", data)
	}
}

func TestGapIsCorruptionNotPanic(t *testing.T) {
	dir := t.TempDir()
	buf, err := appendFrame(nil, typeEntry, ent(1, 1, "a"))
	must(t, err)
	buf, err = appendFrame(buf, typeEntry, ent(1, 5, "e"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, FileName), buf, 0o644))
	if _, _, err := Open(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open over a gap: %v, want ErrCorrupt", err)
	}
	buf, err = appendFrame(nil, 9, ent(1, 1, "a"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, FileName), buf, 0o644))
	if _, _, err := Open(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open over an unknown frame type: %v, want ErrCorrupt", err)
	}
}

func FuzzOpen(f *testing.F) {
	b, _ := appendFrame(nil, typeEntry, ent(1, 1, "a"))
	b, _ = appendFrame(b, typeHardState, hs(1, 1, 1))
	f.Add(b)
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 3})
	f.Fuzz(func(t *testing.T, raw []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		l, _, err := Open(dir)
		if err == nil {
			l.Close()
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
