package node

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
)

func TestStateDBErrors(t *testing.T) {
	for _, tc := range []struct {
		name, stateDB string
		want          []string
	}{
		{"backend", "{backend: couchdb}", []string{`stateDB.backend = "couchdb": want one of pebble, leveldb, badger, bbolt`, "memory"}},
		{"unknown option", "{backend: badger, badger: {memtableMB: 8}}", []string{`unknown field "memtableMB"`}},
		{"cache", "{cacheMB: -1}", []string{"stateDB.cacheMB = -1: want 1 to 65536"}},
		{"pebble value separation", "{pebble: {valueSeparation: 100}}", []string{"stateDB.pebble.valueSeparation = 100: want -1 (off) or 256 to 1073741824 bytes (0 means 4096)"}},
		{"pebble compression", "{pebble: {compression: lz4, blobCompression: brotli}}", []string{`stateDB.pebble.compression = "lz4": want snappy, minlz, zstd, none`, `stateDB.pebble.blobCompression = "brotli": want snappy, minlz, zstd, none`}},
		{"leveldb compression", "{leveldb: {compression: zstd}}", []string{`stateDB.leveldb.compression = "zstd": want snappy, none`}},
		{"badger memtable", "{backend: badger, badger: {memTableMB: 4096}}", []string{"stateDB.badger.memTableMB = 4096: want 1 to 1024 (0 means 16)"}},
		{"badger compression", "{badger: {compression: lz4}}", []string{`stateDB.badger.compression = "lz4": want snappy, zstd, none`}},
		{"bbolt mmap", "{backend: bbolt, bbolt: {initialMmapMB: -5}}", []string{"stateDB.bbolt.initialMmapMB = -5"}},
		{"rocksdb not built", "{backend: rocksdb}", []string{"built without rocksdb", "-tags rocksdb"}},
		{"rocksdb", "{rocksdb: {compression: brotli}}", []string{`stateDB.rocksdb.compression = "brotli": want lz4, snappy, zstd, none`}},
		{"checkpoint blocks", "{backend: memory-checkpoint, checkpoint: {everyBlocks: -1}}", []string{"stateDB.checkpoint.everyBlocks = -1: want 1 to 1000000000 (0 means 1000)"}},
		{"checkpoint interval", "{backend: memory-checkpoint, checkpoint: {interval: 1ms}}", []string{"stateDB.checkpoint.interval = 1ms: want 10ms to 24h (0 means 10s)"}},
		{"tiered memory", "{backend: tiered, tiered: {memoryMB: -1, cacheMB: 2000000}}", []string{"stateDB.tiered.memoryMB = -1: want 1 to 1048576 (0 means 256)", "stateDB.tiered.cacheMB = 2000000: want 1 to 1048576 (0 means 64)"}},
		{"tiered flush", "{backend: tiered, tiered: {flushBlocks: -2, flushInterval: 2h}}", []string{"stateDB.tiered.flushBlocks = -2: want 1 to 1000000 (0 means 64)", "stateDB.tiered.flushInterval = 2h0m0s: want 1ms to 1h (0 means 1s)"}},
		{"checkpoint unknown option", "{checkpoint: {every: 5}}", []string{`unknown field "every"`, "everyBlocks, interval"}},
		{"memnode unset", "{backend: memnode}", []string{`stateDB.memnode.address = ""`, "the memory node's listen address", "stateDB.memnode.cas"}},
		{"memnode sizes", "{backend: memnode, memnode: {address: '127.0.0.1:7070', cas: [ca.pem], cacheMB: -2, callTimeout: 1ms}}",
			[]string{"stateDB.memnode.cacheMB = -2: want -1 (none) or 1 to 1048576 (0 means 64)", "stateDB.memnode.callTimeout = 1ms: want 100ms to 10m (0 means 30s)"}},
		{"memnode unknown option", "{memnode: {adress: x}}", []string{`unknown field "adress"`, "address, cas, cacheMB, callTimeout"}},
		{"redis unset", "{backend: redis}", []string{`stateDB.redis.address = ""`, "host:port, or the absolute path of its unix socket"}},
		{"redis fields", "{backend: redis, redis: {address: 'localhost', database: 16, prefix: 'a b', cas: [ca.pem]}}", []string{
			`stateDB.redis.address = "localhost": want host:port`, "stateDB.redis.database = 16: want 0 to 15", `stateDB.redis.prefix = "a b"`, "stateDB.redis.cas", "none unless tls: true"}},
		{"redis tls on a socket", "{backend: redis, redis: {address: /run/redis.sock, tls: true}}", []string{"stateDB.redis.tls = true: want false with a unix socket"}},
		{"redis unknown option", "{redis: {addr: x}}", []string{`unknown field "addr"`, "address, database, prefix"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "rocksdb not built" && backend.Check("rocksdb") == nil {
				t.Skip("this test binary has rocksdb")
			}
			dir := writeNet(t, channelYAML, nodeYAML+"stateDB: "+tc.stateDB+"\n")
			_, err := LoadNode(filepath.Join(dir, "node.yaml"))
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err %v, want ErrConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestStateDBBackends starts each backend the way a peer does, from one
// line of config, and checks that the directory it wrote is refused by
// another backend.
func TestStateDBBackends(t *testing.T) {
	dataDir := t.TempDir()
	for _, name := range []string{"pebble", "leveldb", "badger", "bbolt", "tiered", "memory-checkpoint", "memory"} {
		dir := writeNet(t, channelYAML, nodeYAML+"stateDB: {backend: "+name+"}\ndataDir: "+filepath.Join(dataDir, name)+"\n")
		cfg, err := LoadNode(filepath.Join(dir, "node.yaml"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		db, err := openState(cfg, 0, 0, nil, new(Repairs), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("openState(%s): %v", name, err)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("%s: Close: %v", name, err)
		}
		if name == "memory" {
			continue
		}
		cfg.StateDB.Backend = "bbolt"
		if name == "bbolt" {
			cfg.StateDB.Backend = "pebble"
		}
		if db, err := openState(cfg, 0, 0, nil, new(Repairs), slog.New(slog.DiscardHandler)); !errors.Is(err, statedb.ErrFormat) {
			if err == nil {
				_ = db.Close()
			}
			t.Errorf("opening a %s state directory with %s: err = %v, want ErrFormat", name, cfg.StateDB.Backend, err)
		}
	}
}

// TestStateAheadIsRebuilt: a state database whose savepoint passed the
// block store's height (a machine crash with relaxed durability, or a
// lost last block with durable), or passed a damaged block, is emptied so
// that the committer rebuilds it from the blocks; one at or below both is
// kept.
func TestStateAheadIsRebuilt(t *testing.T) {
	damaged := []ledger.Damage{{Block: 2, Segment: "000000.seg", Offset: 100, Reason: "checksum mismatch"}}
	for _, tc := range []struct {
		name    string
		dur     string
		height  uint64
		damaged []ledger.Damage
		want    uint64
	}{
		{"relaxed, tail lost", "relaxed", 3, nil, 0},
		{"durable, tail lost", "durable", 3, nil, 0},
		{"durable, damaged block below the savepoint", "durable", 9, damaged, 0},
		{"durable, in step", "durable", 5, nil, 5},
	} {
		dir := writeNet(t, channelYAML, nodeYAML+"dataDir: "+filepath.Join(t.TempDir(), tc.dur)+"\n")
		cfg, err := LoadNode(filepath.Join(dir, "node.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Pipeline.Durability = tc.dur
		log := slog.New(slog.DiscardHandler)
		var repairs Repairs
		db, err := openState(cfg, 0, 0, nil, &repairs, log)
		if err != nil {
			t.Fatal(err)
		}
		var b statedb.Batch
		b.Put("ns", "k", []byte("v"), statedb.Version{Block: 4})
		if err := db.Apply(&b, 5, false); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if db, err = openState(cfg, tc.height, 0, tc.damaged, &repairs, log); err != nil {
			t.Fatal(err)
		}
		sp, err := db.Savepoint()
		db.Close()
		if err != nil || sp != tc.want {
			t.Errorf("%s: savepoint %d, %v after reopening at block height %d; want %d", tc.name, sp, err, tc.height, tc.want)
		}
		if rebuilt := tc.want == 0; repairs.StateRebuilds != map[bool]uint64{true: 1}[rebuilt] {
			t.Errorf("%s: %d state rebuilds counted", tc.name, repairs.StateRebuilds)
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "state.discarded")); !os.IsNotExist(err) {
			t.Errorf("%s: the discarded state was left behind (%v)", tc.name, err)
		}
	}
}

// TestRedisUnreachable: a peer whose Redis does not answer does not
// start, and says which server it tried.
func TestRedisUnreachable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "nobody.sock")
	dir := writeNet(t, channelYAML, nodeYAML+"stateDB: {backend: redis, redis: {address: "+sock+"}}\ndataDir: "+t.TempDir()+"\n")
	cfg, err := LoadNode(filepath.Join(dir, "node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := openState(cfg, 0, 0, nil, new(Repairs), slog.New(slog.DiscardHandler))
	if err == nil {
		_ = db.Close()
		t.Fatal("a peer opened its state on a Redis that is not there")
	}
	if !errors.Is(err, statedb.ErrUnavailable) || !strings.Contains(err.Error(), sock) {
		t.Fatalf("err %v; want ErrUnavailable naming %s", err, sock)
	}
}
