package redisdb_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/conformance"
	"github.com/strand-ledger/strand/ledger/statedb/redisdb"
	"github.com/strand-ledger/strand/ledger/statedb/redisdb/redistest"
)

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	conformance.Run(t, conformance.Factory{
		Name:       "redis",
		Open:       func(dir string) (statedb.DB, error) { return redisdb.Open(dir, redisdb.Options{Address: srv.Socket}) },
		Persistent: true, // while the server runs: the prefix follows the directory
	})
}

func TestOptions(t *testing.T) {
	for _, o := range []redisdb.Options{{}, {Address: "x", Database: 16}, {Address: "x", Prefix: "a b"}} {
		if _, err := redisdb.Open(t.TempDir(), o); !errors.Is(err, redisdb.ErrBadOptions) {
			t.Errorf("Open with %+v: %v; want ErrBadOptions", o, err)
		}
	}
	addr := filepath.Join(t.TempDir(), "none.sock")
	_, err := redisdb.Open(t.TempDir(), redisdb.Options{Address: addr})
	if !errors.Is(err, statedb.ErrUnavailable) || !contains(err.Error(), addr) {
		t.Errorf("Open of a server that is not there: %v; want ErrUnavailable naming %s", err, addr)
	}
}

// TestEvictingServerRefused: a server that may evict keys under memory
// pressure would lose state without a trace; Open refuses it, naming the
// policy, and opens once it is noeviction.
func TestEvictingServerRefused(t *testing.T) {
	srv := redistest.Start(t)
	admin := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
	defer admin.Close()
	ctx := context.Background()
	if err := admin.ConfigSet(ctx, "maxmemory", "100mb").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := redisdb.Open(t.TempDir(), redisdb.Options{Address: srv.Socket})
	if !errors.Is(err, redisdb.ErrEviction) || !contains(err.Error(), "allkeys-lru") {
		t.Fatalf("Open of an evicting server: %v; want ErrEviction naming allkeys-lru", err)
	}
	if err := admin.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	db, err := redisdb.Open(t.TempDir(), redisdb.Options{Address: srv.Socket})
	if err != nil {
		t.Fatalf("Open of a noeviction server: %v", err)
	}
	_ = db.Close()
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func BenchmarkRedis(b *testing.B) {
	srv := redistest.Start(b)
	conformance.RunBenchmarks(b, conformance.Factory{
		Name: "redis",
		Open: func(dir string) (statedb.DB, error) { return redisdb.Open(dir, redisdb.Options{Address: srv.Socket}) },
	})
}
