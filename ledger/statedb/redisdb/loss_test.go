package redisdb_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/redisdb"
	"github.com/strand-ledger/strand/ledger/statedb/redisdb/redistest"
)

// block applies height h: key k<h> and an overwrite of "shared".
func block(t *testing.T, db statedb.DB, h uint64) {
	t.Helper()
	var b statedb.Batch
	b.Put("cc", fmt.Sprintf("k%d", h), []byte(fmt.Sprintf("v%d", h)), statedb.Version{Block: h})
	b.Put("cc", "shared", []byte(fmt.Sprintf("s%d", h)), statedb.Version{Block: h})
	if err := db.Apply(&b, h, false); err != nil {
		t.Fatalf("Apply of height %d: %v", h, err)
	}
}

// untilAnswered retries op while it fails with ErrUnavailable (the
// client's first call after a server restart meets the dead connection),
// at most a few times.
func untilAnswered(op func() error) error {
	var err error
	for range 5 {
		if err = op(); !errors.Is(err, statedb.ErrUnavailable) {
			return err
		}
	}
	return err
}

// checkState checks that db holds exactly heights 1..h.
func checkState(t *testing.T, db statedb.DB, h uint64) {
	t.Helper()
	keys := []statedb.Key{{Namespace: "cc", Key: "shared"}}
	for i := uint64(1); i <= h+1; i++ {
		keys = append(keys, statedb.Key{Namespace: "cc", Key: fmt.Sprintf("k%d", i)})
	}
	out := make([]statedb.Result, len(keys))
	if err := db.GetMany(keys, out); err != nil {
		t.Fatal(err)
	}
	if string(out[0].Value.Data) != fmt.Sprintf("s%d", h) {
		t.Errorf("shared = %q, want s%d", out[0].Value.Data, h)
	}
	for i, r := range out[1:] {
		if want := uint64(i+1) <= h; r.Found != want || want && string(r.Value.Data) != fmt.Sprintf("v%d", i+1) {
			t.Errorf("k%d: found %v %q, want found %v", i+1, r.Found, r.Value.Data, want)
		}
	}
}

// TestLoss: a server that lost state, by a restart without persistence
// or by FLUSHALL, is never read or written as if it held the applied
// height: reads, scans and Apply fail with ErrStateLost naming the
// heights; Savepoint then reports what the server holds (0: nothing), the
// blocks above it are re-applied, and the state is whole again.
func TestLoss(t *testing.T) {
	srv := redistest.Start(t)
	admin := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
	defer admin.Close()
	for _, how := range []string{"restart", "flushall"} {
		t.Run(how, func(t *testing.T) {
			db, err := redisdb.Open(t.TempDir(), redisdb.Options{Address: srv.Socket})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for h := uint64(1); h <= 3; h++ {
				block(t, db, h)
			}
			if how == "restart" {
				srv.Restart()
			} else if err := admin.FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			err = untilAnswered(func() error { _, _, err := db.Get("cc", "k1"); return err })
			if !errors.Is(err, statedb.ErrStateLost) || !strings.Contains(err.Error(), "holds height 0") || !strings.Contains(err.Error(), "applied 3") {
				t.Fatalf("Get after the loss: %v; want ErrStateLost naming heights 0 and 3", err)
			}
			out := make([]statedb.Result, 1)
			if err := db.GetMany([]statedb.Key{{Namespace: "cc", Key: "k2"}}, out); !errors.Is(err, statedb.ErrStateLost) {
				t.Errorf("GetMany after the loss: %v; want ErrStateLost", err)
			}
			if err := db.Scan("cc", "", "", func(string, statedb.Value) bool { return true }); !errors.Is(err, statedb.ErrStateLost) {
				t.Errorf("Scan after the loss: %v; want ErrStateLost", err)
			}
			var b statedb.Batch
			b.Put("cc", "k4", []byte("v4"), statedb.Version{Block: 4})
			if err := db.Apply(&b, 4, false); !errors.Is(err, statedb.ErrStateLost) {
				t.Errorf("Apply after the loss: %v; want ErrStateLost", err)
			}
			if sp, err := db.Savepoint(); err != nil || sp != 0 {
				t.Fatalf("Savepoint after the loss = %d, %v; want 0 (the server holds nothing)", sp, err)
			}
			for h := uint64(1); h <= 4; h++ { // the committer's restore, then the next block
				block(t, db, h)
			}
			checkState(t, db, 4)
		})
	}
}

// TestLossBetweenOpens: a peer stopped while its Redis restarted empty
// opens at savepoint 0 and rebuilds from its block store.
func TestLossBetweenOpens(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	db, err := redisdb.Open(dir, redisdb.Options{Address: srv.Socket})
	if err != nil {
		t.Fatal(err)
	}
	block(t, db, 1)
	block(t, db, 2)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	if db, err = redisdb.Open(dir, redisdb.Options{Address: srv.Socket}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if sp, err := db.Savepoint(); err != nil || sp != 0 {
		t.Fatalf("Savepoint after a restart of the server = %d, %v; want 0", sp, err)
	}
	block(t, db, 1)
	block(t, db, 2)
	checkState(t, db, 2)
}

// TestSecondWriter: two state databases on one prefix (two peers given
// the same stateDB.redis.prefix) are found out: the one behind is refused,
// naming the prefix, and its reads fail as unavailable rather than answer
// from another peer's state.
func TestSecondWriter(t *testing.T) {
	srv := redistest.Start(t)
	o := redisdb.Options{Address: srv.Socket, Prefix: "shared:"}
	a, err := redisdb.Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := redisdb.Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	block(t, a, 1)
	block(t, a, 2)
	var batch statedb.Batch
	batch.Put("cc", "x", []byte("y"), statedb.Version{Block: 1})
	if err := b.Apply(&batch, 1, false); err == nil || !strings.Contains(err.Error(), "another writer") || !strings.Contains(err.Error(), `"shared:"`) {
		t.Errorf("second writer's Apply: %v; want a refusal naming the prefix", err)
	}
	if _, _, err := b.Get("cc", "k1"); !errors.Is(err, statedb.ErrUnavailable) {
		t.Errorf("second writer's Get: %v; want ErrUnavailable (the server is above its height)", err)
	}
}
