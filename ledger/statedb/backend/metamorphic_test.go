package backend_test

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
	"github.com/strand-ledger/strand/ledger/statedb/redisdb/redistest"
	"github.com/strand-ledger/strand/memnode/memnodetest"
)

// The metamorphic test applies one random sequence of operations (puts,
// deletes, batches with savepoints, Get, GetMany, Scan, close and reopen,
// and a simulated crash followed by recovery) to every backend, records
// what each read returns, and requires every backend's record to equal
// the memory backend's. Replay a failure with STRAND_METAMORPHIC_SEED.

const metamorphicOps = 1000

// applied is one successful Apply, kept to replay after a crash.
type applied struct {
	batch  statedb.Batch
	height uint64
}

// runner drives one backend through the operations.
type runner struct {
	t       *testing.T
	name    string
	dir     string
	db      statedb.DB
	log     []applied // every batch applied, in order
	synced  uint64    // the height of the last synced Apply
	crashes int
	tls     *memnodetest.TLS // memnode's
	redis   string           // redis's server (its socket)
}

func (r *runner) open() {
	r.t.Helper()
	o := backend.Options{}
	o.Badger.MemTableSize = 4 << 20 // keeps the copies of a crash small
	o.Checkpoint.EveryBlocks = 4    // crashes then find background checkpoints
	// A memory tier of a few dozen versions and a tiny cache, so that
	// reads fall through every tier and crashes lose unflushed blocks.
	o.Tiered.MemoryBytes, o.Tiered.CacheBytes, o.Tiered.FlushBlocks = 4<<10, 1<<10, 3
	o.Redis.Address = r.redis
	var db statedb.DB
	var err error
	if r.name == backend.Memnode {
		// Served from r.dir over mutual TLS on 127.0.0.1; Close stops
		// the node, and a crash copies r.dir while it runs, as for the
		// others.
		db, err = memnodetest.Open(r.tls, r.dir, o.Tiered, o.Tiered.CacheBytes)
	} else {
		db, err = backend.Open(r.name, r.dir, o)
	}
	if err != nil {
		r.t.Fatalf("%s: Open: %v", r.name, err)
	}
	r.db = db
}

// crash simulates a process crash: the directory is copied as the OS
// holds it while the database is still open (so unflushed user-space
// buffers are lost, as in a crash), the copy is opened, and the blocks
// above its savepoint are re-applied, as the committer's recovery does.
//
// For redis the state is on the server, which a crash of the peer leaves
// as it was: the same directory (the same key prefix) is opened again. A
// server that loses state is redisdb's TestLoss.
func (r *runner) crash(seed uint64) error {
	r.crashes++
	if r.name != backend.Redis {
		copyDir := filepath.Join(filepath.Dir(r.dir), fmt.Sprintf("crash%d", r.crashes))
		if err := copyLive(r.dir, copyDir); err != nil {
			return err
		}
		r.dir = copyDir
	}
	_ = r.db.Close() // releases the locks; the copy is the crashed state
	r.open()
	sp, err := r.db.Savepoint()
	if err != nil {
		return err
	}
	if sp < r.synced {
		return fmt.Errorf("after a crash: savepoint %d, below the last synced height %d", sp, r.synced)
	}
	for _, a := range r.log {
		if a.height > sp {
			if err := r.db.Apply(&a.batch, a.height, false); err != nil {
				return fmt.Errorf("recovery: re-applying height %d: %w", a.height, err)
			}
		}
	}
	return nil
}

// copyLive copies the directory of a running engine. Background work
// (flushes, compactions) may create, grow or delete files meanwhile, and a
// copy taken while a file was being written is not a state any crash
// leaves: leveldb syncs a compaction's table before its manifest names
// it, but cp could copy the table half-written and the manifest after it
// named the table. So a copy counts only if no file of the source changed
// name, size or modification time while it was taken; otherwise it is
// retried.
func copyLive(src, dst string) error {
	var err error
	for range 50 {
		_ = os.RemoveAll(dst)
		before, berr := files(src)
		out, cerr := exec.Command("cp", "-a", "--sparse=always", src, dst).CombinedOutput()
		if cerr != nil {
			err = fmt.Errorf("copy for crash: %v: %s", cerr, out)
			continue
		}
		after, aerr := files(src)
		if berr == nil && aerr == nil && before == after {
			return nil
		}
		err = fmt.Errorf("copy for crash: %s changed during the copy", src)
	}
	return err
}

// files lists every file under dir with its size and modification time.
func files(dir string) (string, error) {
	var sb strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&sb, "%s %d %d/", path, info.Size(), info.ModTime().UnixNano())
		return nil
	})
	return sb.String(), err
}

func metamorphicSeed(t *testing.T) uint64 {
	if s := os.Getenv("STRAND_METAMORPHIC_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("STRAND_METAMORPHIC_SEED=%q: want an unsigned decimal integer", s)
		}
		return seed
	}
	return rand.Uint64()
}

var mmNamespaces = []string{"a", "ab", "a\x01", "b"}

// gen draws from small pools so that operations collide.
type gen struct{ r *rand.Rand }

func (g gen) ns() string { return mmNamespaces[g.r.IntN(len(mmNamespaces))] }

func (g gen) key() string {
	const alphabet = "\x00ab\xff"
	b := make([]byte, g.r.IntN(4))
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

// run applies the sequence seed generates to r and returns what every
// operation observed, one line each.
func (r *runner) run(seed uint64) ([]string, error) {
	g := gen{rand.New(rand.NewPCG(seed, seed^0xfeed))}
	var out []string
	var pending statedb.Batch
	sp := uint64(0)
	note := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for op := range metamorphicOps {
		switch p := g.r.IntN(100); {
		case p < 30:
			val := make([]byte, g.r.IntN(24))
			for i := range val {
				val[i] = byte(g.r.Uint32())
			}
			pending.Put(g.ns(), g.key(), val, statedb.Version{Block: sp, Tx: uint32(g.r.IntN(5))})
		case p < 40:
			pending.Delete(g.ns(), g.key(), statedb.Version{Block: sp})
		case p < 52:
			height, sync := sp+1+uint64(g.r.IntN(2)), g.r.IntN(6) == 0
			if err := r.db.Apply(&pending, height, sync); err != nil {
				return out, fmt.Errorf("op %d: Apply at %d: %w", op, height, err)
			}
			r.log = append(r.log, applied{statedb.Batch{Writes: append([]statedb.Write(nil), pending.Writes...)}, height})
			if sync {
				r.synced = height
			}
			sp = height
			pending = statedb.Batch{}
		case p < 65:
			ns, key := g.ns(), g.key()
			v, ok, err := r.db.Get(ns, key)
			note("get %q %q: %s %v", ns, key, show(statedb.Result{Value: v, Found: ok}), err)
		case p < 75:
			keys := make([]statedb.Key, g.r.IntN(8))
			for i := range keys {
				keys[i] = statedb.Key{Namespace: g.ns(), Key: g.key()}
			}
			res := make([]statedb.Result, len(keys))
			err := r.db.GetMany(keys, res)
			var sb strings.Builder
			for _, x := range res {
				sb.WriteString(show(x) + "; ")
			}
			note("getmany %q: %s%v", keys, sb.String(), err)
		case p < 90:
			ns, start, end, limit := g.ns(), g.key(), "", 1+g.r.IntN(10)
			if g.r.IntN(2) == 0 {
				end = g.key()
			}
			var sb strings.Builder
			n := 0
			err := r.db.Scan(ns, start, end, func(k string, v statedb.Value) bool {
				fmt.Fprintf(&sb, "%q=%s; ", k, show(statedb.Result{Value: v, Found: true}))
				n++
				return n < limit
			})
			note("scan %q [%q, %q) limit %d: %s%v", ns, start, end, limit, sb.String(), err)
		case p < 95:
			got, err := r.db.Savepoint()
			note("savepoint %d %v", got, err)
		case p < 98:
			if backend.Persistent(r.name) {
				if err := r.db.Close(); err != nil {
					return out, fmt.Errorf("op %d: Close: %w", op, err)
				}
				r.open()
			}
		default:
			if backend.Persistent(r.name) {
				if err := r.crash(seed); err != nil {
					return out, fmt.Errorf("op %d: %w", op, err)
				}
			}
		}
	}
	return out, nil
}

func show(x statedb.Result) string {
	if !x.Found {
		return "missing"
	}
	return fmt.Sprintf("%x@%v", x.Value.Data, x.Value.Version)
}

func TestMetamorphic(t *testing.T) {
	seed := metamorphicSeed(t)
	t.Logf("seed %d (replay with STRAND_METAMORPHIC_SEED=%d)", seed, seed)
	ref := &runner{t: t, name: "memory", dir: filepath.Join(t.TempDir(), "memory")}
	ref.open()
	want, err := ref.run(seed)
	if err != nil {
		t.Fatalf("memory (seed %d): %v", seed, err)
	}
	_ = ref.db.Close()
	for _, name := range backend.Names() {
		if name == "memory" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			r := &runner{t: t, name: name, dir: filepath.Join(t.TempDir(), name)}
			if name == backend.Redis {
				r.redis = redistest.Start(t).Socket
			}
			if name == backend.Memnode {
				var err error
				if r.tls, err = memnodetest.NewTLS(); err != nil {
					t.Fatal(err)
				}
			}
			r.open()
			defer func() { _ = r.db.Close() }()
			got, err := r.run(seed)
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("%s (seed %d): observation %d differs from memory:\n got  %s\n want %s", name, seed, i, got[i], want[i])
				}
			}
			if err != nil {
				t.Fatalf("%s (seed %d): %v", name, seed, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s (seed %d): %d observations, memory made %d", name, seed, len(got), len(want))
			}
		})
	}
}
