package ledger

import (
	"errors"
	"testing"
)

// TestAppendNoSync: blocks appended without fsync are readable at once,
// and Sync, Append and Close each make them durable with one fsync.
func TestAppendNoSync(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	var c chain
	all := c.blocks(5, 2)
	if err := s.AppendNoSync(all[:3]); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Fsyncs; got != 0 {
		t.Fatalf("%d fsyncs after AppendNoSync, want 0", got)
	}
	checkContents(t, s, all[:3], 3)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil { // nothing new: no fsync
		t.Fatal(err)
	}
	if got := s.Stats().Fsyncs; got != 1 {
		t.Fatalf("%d fsyncs after Sync twice, want 1", got)
	}
	if err := s.AppendNoSync(all[3:4]); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, all[4:]) // its fsync covers block 3 too
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Fsyncs; got != 2 {
		t.Fatalf("%d fsyncs, want 2 (Sync, then Append)", got)
	}
	more := c.blocks(2, 1)
	if err := s.AppendNoSync(more); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Fsyncs; got != 3 {
		t.Fatalf("%d fsyncs after Close, want 3: a clean Close syncs", got)
	}
	if err := s.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v, want ErrClosed", err)
	}
	s = openStore(t, dir, Options{})
	defer s.Close()
	checkContents(t, s, append(all, more...), len(all)+len(more))
}
