package compactsched

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// owes reports whether the scheduler owes its database a compaction: its
// loop samples periodically iff it does (after the pass that said so).
func (s *Scheduler) owes() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owed
}

func open(t *testing.T, s *Scheduler) *pebble.DB {
	t.Helper()
	opts := &pebble.Options{MemTableSize: 256 << 10, L0CompactionThreshold: 2, L0CompactionFileThreshold: 2}
	opts.EnsureDefaults()
	opts.Experimental.CompactionScheduler = s
	db, err := pebble.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestCompacts: a database written far past its memtable flushes and
// compacts under the scheduler (it grants what Pebble asks for), and once
// the writes stop the scheduler owes nothing, so it samples no more.
func TestCompacts(t *testing.T) {
	s := New()
	db := open(t, s)
	val := make([]byte, 1024)
	for i := range 20000 {
		if err := db.Set([]byte(fmt.Sprintf("key-%08d", i%5000)), val, pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for db.Metrics().Compact.Count == 0 || db.Metrics().Compact.NumInProgress > 0 || s.owes() {
		if time.Now().After(deadline) {
			m := db.Metrics()
			t.Fatalf("after the writes: %d compactions, %d in progress, owed %v; want some done, none running, nothing owed", m.Compact.Count, m.Compact.NumInProgress, s.owes())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := db.Metrics().Levels[0].TablesCount; n > 4 {
		t.Errorf("L0 holds %d tables after compactions settled; want the scheduler to have let them run", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIdleOwesNothing: a database that never asks for a compaction is
// never owed one, so the scheduler's loop never starts its ticker.
func TestIdleOwesNothing(t *testing.T) {
	s := New()
	db := open(t, s)
	if err := db.Set([]byte("k"), []byte("v"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if s.owes() {
		t.Error("an idle database is owed a compaction")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Unregister ran: the loop has ended.
	select {
	case <-s.done:
	default:
		t.Error("the scheduler's loop runs after the database closed")
	}
}
