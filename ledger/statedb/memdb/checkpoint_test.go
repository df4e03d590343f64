package memdb_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
)

// applyBlocks applies blocks from..to-1; block i sets "last" to i and
// creates "b<i>".
func applyBlocks(t *testing.T, db *memdb.DB, from, to uint64, sync bool) {
	t.Helper()
	for i := from; i < to; i++ {
		var b statedb.Batch
		b.Put("cc", "last", []byte(fmt.Sprint(i)), statedb.Version{Block: i})
		b.Put("cc", fmt.Sprint("b", i), []byte{byte(i)}, statedb.Version{Block: i, Tx: 1})
		if err := db.Apply(&b, i+1, sync); err != nil {
			t.Fatalf("Apply block %d: %v", i, err)
		}
	}
}

// wantState checks that db holds exactly the state after blocks 0..sp-1.
func wantState(t *testing.T, db statedb.DB, sp uint64) {
	t.Helper()
	got, err := db.Savepoint()
	if err != nil || got != sp {
		t.Fatalf("Savepoint = %d, %v; want %d", got, err, sp)
	}
	n := uint64(0)
	err = db.Scan("cc", "b", "c", func(key string, v statedb.Value) bool {
		n++
		return true
	})
	if err != nil || n != sp {
		t.Fatalf("Scan found %d block keys (err %v), want %d", n, err, sp)
	}
	v, ok, err := db.Get("cc", "last")
	switch {
	case err != nil:
		t.Fatal(err)
	case sp == 0 && ok:
		t.Fatalf("empty state has last = %q", v.Data)
	case sp > 0 && (!ok || string(v.Data) != fmt.Sprint(sp-1) || v.Version != statedb.Version{Block: sp - 1}):
		t.Fatalf("last = %q at %v (found %v), want %d at %d:0", v.Data, v.Version, ok, sp-1, sp-1)
	}
}

// copyCheckpoints copies dir as a crash would leave it: the files on disk.
func copyCheckpoints(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // pruned meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func ckptFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "checkpoint-*.ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCheckpointEveryBlocks: background checkpoints follow EveryBlocks; a
// crash (the directory as the disk holds it, without Close) reopens at
// the newest checkpoint's savepoint with exactly that state; only the
// newest two files are kept.
func TestCheckpointEveryBlocks(t *testing.T) {
	dir := t.TempDir()
	db, err := memdb.Open(dir, memdb.Options{EveryBlocks: 5, Interval: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	applyBlocks(t, db, 0, 23, false)
	for db.Stats().Savepoint < 20 { // the background writer gets there
		time.Sleep(time.Millisecond)
	}
	st := db.Stats()
	if st.Checkpoints == 0 || st.Err != nil || st.Bytes == 0 {
		t.Fatalf("Stats = %v", st)
	}
	crashed := copyCheckpoints(t, dir)
	if n := len(ckptFiles(t, crashed)); n > 2 {
		t.Errorf("%d checkpoint files after pruning, want at most 2", n)
	}
	re, err := memdb.Open(crashed, memdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	sp, _ := re.Savepoint()
	if sp < 20 || sp > 23 {
		t.Fatalf("savepoint after crash = %d, want 20 to 23", sp)
	}
	wantState(t, re, sp)
	applyBlocks(t, re, sp, 30, false) // what the committer's replay does
	wantState(t, re, 30)
}

// TestCheckpointSyncAndClose: Apply with sync returns with a checkpoint at
// its height on disk; Close writes the final state; reopening replays
// nothing.
func TestCheckpointSyncAndClose(t *testing.T) {
	dir := t.TempDir()
	db, err := memdb.Open(dir, memdb.Options{EveryBlocks: 1e9, Interval: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	applyBlocks(t, db, 0, 3, true)
	if st := db.Stats(); st.Savepoint != 3 {
		t.Fatalf("after synced Apply to 3: Stats = %v", st)
	}
	crashed := copyCheckpoints(t, dir)
	applyBlocks(t, db, 3, 7, false)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir string
		sp  uint64
	}{{crashed, 3}, {dir, 7}} {
		re, err := memdb.Open(c.dir, memdb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		wantState(t, re, c.sp)
		if err := re.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckpointRefusals: a checkpoint of another backend or format
// version is refused naming both; a damaged one as corrupt; a leftover
// temporary file is removed.
func TestCheckpointRefusals(t *testing.T) {
	newDir := func(t *testing.T) (dir, file string) {
		dir = t.TempDir()
		db, err := memdb.Open(dir, memdb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		applyBlocks(t, db, 0, 4, false)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		files := ckptFiles(t, dir)
		if len(files) != 1 {
			t.Fatalf("checkpoint files %v, want one", files)
		}
		return dir, files[0]
	}
	patch := func(t *testing.T, file string, f func([]byte) []byte) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, f(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The header: 8 bytes of magic, the name's length (1 byte), the name
	// (17 bytes), the format version (1 byte).
	const nameAt, versionAt = 9, 26
	for _, tc := range []struct {
		name  string
		patch func([]byte) []byte
		is    error
		want  []string
	}{
		{"other backend", func(b []byte) []byte { copy(b[nameAt:], "badger-checkpoint"); return b }, statedb.ErrFormat,
			[]string{`backend "badger-checkpoint" format 1`, `this is backend "memory-checkpoint" format 1`}},
		{"other version", func(b []byte) []byte { b[versionAt] = 2; return b }, statedb.ErrFormat,
			[]string{`backend "memory-checkpoint" format 2`, `this is backend "memory-checkpoint" format 1`}},
		{"not a checkpoint", func(b []byte) []byte { return []byte("hello, world") }, statedb.ErrFormat, []string{"no checkpoint"}},
		{"flipped bit", func(b []byte) []byte { b[len(b)-10] ^= 1; return b }, statedb.ErrCorrupt, []string{"CRC"}},
		{"truncated", func(b []byte) []byte { return b[:len(b)-3] }, statedb.ErrCorrupt, []string{"checkpoint-"}},
		{"trailing bytes", func(b []byte) []byte { return append(b, 0) }, statedb.ErrCorrupt, []string{"CRC"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, file := newDir(t)
			patch(t, file, tc.patch)
			db, err := memdb.Open(dir, memdb.Options{})
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	t.Run("temporary file", func(t *testing.T) {
		dir, _ := newDir(t)
		tmp := filepath.Join(dir, "checkpoint-123.tmp")
		if err := os.WriteFile(tmp, []byte("half a checkpoint"), 0o644); err != nil {
			t.Fatal(err)
		}
		db, err := memdb.Open(dir, memdb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		wantState(t, db, 4)
		if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the temporary file is still there: %v", err)
		}
	})
	t.Run("directory of another backend", func(t *testing.T) {
		dir := t.TempDir()
		if err := statedb.ClaimDir(dir, statedb.Format{Backend: "pebble", Version: 1}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := memdb.Open(dir, memdb.Options{}); !errors.Is(err, statedb.ErrFormat) {
			t.Fatalf("err = %v, want ErrFormat", err)
		}
	})
}

// TestCheckpointFailure: while checkpoints fail, Apply refuses batches,
// naming the failure; once one succeeds, Apply works again.
func TestCheckpointFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	db, err := memdb.Open(dir, memdb.Options{EveryBlocks: 1e9, Interval: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	applyBlocks(t, db, 0, 2, false)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	var b statedb.Batch
	b.Put("cc", "k", []byte("v"), statedb.Version{Block: 2})
	if err := db.Apply(&b, 3, true); err == nil {
		t.Fatal("synced Apply with its directory gone succeeded")
	}
	if err := db.Apply(&b, 4, false); err == nil || !strings.Contains(err.Error(), "checkpoints fail") {
		t.Fatalf("Apply after a failed checkpoint: err = %v, want a refusal", err)
	}
	if st := db.Stats(); st.Failures != 1 || st.Err == nil {
		t.Fatalf("Stats = %v, want one failure", st)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := db.Apply(&b, 4, false); err != nil {
		t.Fatalf("Apply after a good checkpoint: %v", err)
	}
}

func TestOptions(t *testing.T) {
	o := memdb.Options{EveryBlocks: 2e9, Interval: time.Millisecond}
	err := o.Validate()
	for _, w := range []string{"EveryBlocks = 2000000000", "Interval = 1ms", "10ms to 24h"} {
		if !errors.Is(err, memdb.ErrBadOptions) || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %v, want ErrBadOptions containing %q", err, w)
		}
	}
	if _, err := memdb.Open(t.TempDir(), o); !errors.Is(err, memdb.ErrBadOptions) {
		t.Errorf("Open with bad options: err = %v", err)
	}
}
