package redisdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// Format is the directory's claim: the state itself is on the server.
var Format = statedb.Format{Backend: "redis", Version: 1}

// ErrEviction: the server may evict keys under memory pressure, which
// would lose state without a trace; test with errors.Is.
var ErrEviction = errors.New("redisdb: the server may evict keys")

// Timeouts of the connection: a state batch of a group of blocks can be
// tens of MiB, so reads and writes get longer than go-redis's 3 s.
const (
	dialTimeout = 5 * time.Second
	ioTimeout   = 30 * time.Second
	// chunk bounds the arguments of one command (MSET, ZADD, DEL, ZREM,
	// MGET); a batch is several commands in one MULTI.
	chunk = 4096
)

// DB is a statedb.DB on a Redis server, fenced against a server that lost
// state (doc.go).
type DB struct {
	cl     *redis.Client
	addr   string
	prefix string
	keys   string // prefix of every value's key: <prefix>k
	idx    string // the sorted set of encoded keys
	sp     string // the savepoint's key

	gate statedb.Gate
	// mu: Apply and Savepoint's start over hold it for writing, reads for
	// reading (Redis has no snapshots; a read is one point in time because
	// no write of this DB runs meanwhile).
	mu      sync.RWMutex
	applied atomic.Uint64 // the fence: the height last acknowledged
	lost    atomic.Bool   // a loss was seen; Savepoint starts over
}

var (
	_ statedb.DB            = (*DB)(nil)
	_ statedb.Dumper        = (*DB)(nil)
	_ statedb.VersionGetter = (*DB)(nil)
)

// Open connects to the server in opts and opens the state database of
// dir there (dir holds only the Format claim). An unreachable server
// fails it with statedb.ErrUnavailable naming the address; a server that
// may evict keys with ErrEviction.
func Open(dir string, opts Options) (*DB, error) {
	if err := statedb.PrepareOpen(dir, Format, &opts, nil); err != nil {
		return nil, err
	}
	prefix := opts.Prefix
	if prefix == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("redisdb: %w", err)
		}
		sum := sha256.Sum256([]byte(abs))
		prefix = "strand:" + hex.EncodeToString(sum[:8]) + ":"
	}
	network := "tcp"
	if strings.HasPrefix(opts.Address, "/") {
		network = "unix"
	}
	// No retries inside the client: a write retried after its answer was
	// lost is found by the fence instead (Apply), and the committer
	// retries what fails with ErrUnavailable.
	cl := redis.NewClient(&redis.Options{Network: network, Addr: opts.Address, DB: opts.Database,
		Username: opts.Username, Password: opts.Password, TLSConfig: opts.TLS, MaxRetries: -1,
		DialTimeout: dialTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout})
	d := &DB{cl: cl, addr: opts.Address, prefix: prefix, keys: prefix + "k", idx: prefix + "idx"}
	d.sp = d.keys + string(statedb.SavepointKey)
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	if err := cl.Ping(ctx).Err(); err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("%w: redis %s: %v", statedb.ErrUnavailable, opts.Address, err)
	}
	if err := d.checkEviction(ctx); err != nil {
		_ = cl.Close()
		return nil, err
	}
	raw, err := cl.Get(ctx, d.sp).Result()
	h, err := d.savepointOf(raw, err)
	if err != nil {
		_ = cl.Close()
		return nil, err
	}
	d.applied.Store(h)
	return d, nil
}

// checkEviction refuses a server with a memory limit and a policy that
// evicts keys. A server that does not allow CONFIG (a managed one) is
// taken on trust.
func (d *DB) checkEviction(ctx context.Context) error {
	conf, err := d.cl.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		return nil
	}
	if limit, policy := conf["maxmemory"], conf["maxmemory-policy"]; limit != "" && limit != "0" && policy != "" && policy != "noeviction" {
		return fmt.Errorf("%w: redis %s has maxmemory %s with maxmemory-policy %s: a state database must never lose a key silently; set maxmemory-policy noeviction (a full server then refuses writes, and the peer waits)",
			ErrEviction, d.addr, limit, policy)
	}
	return nil
}

// savepointOf decodes the answer to a GET of the savepoint: absent is
// height 0 (an empty or wiped server).
func (d *DB) savepointOf(raw string, err error) (uint64, error) {
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, d.unavailable("read the savepoint", err)
	}
	h, err := statedb.DecodeSavepoint([]byte(raw))
	if err != nil {
		return 0, fmt.Errorf("redisdb: redis %s, key %q: %w", d.addr, d.sp, err)
	}
	return h, nil
}

// fence checks the savepoint h a read found against floor, the height
// applied when it began.
func (d *DB) fence(op string, h, floor uint64) error {
	switch {
	case h == floor:
		return nil
	case h < floor:
		d.lost.Store(true)
		return fmt.Errorf("%w: redis %s: %s: the server holds height %d of prefix %q, this peer applied %d (it restarted without its data, or was flushed)",
			statedb.ErrStateLost, d.addr, op, h, d.prefix, floor)
	default:
		// An Apply whose answer was lost (the fence in Apply sorts it
		// out on the committer's retry), or a second writer (refused
		// there).
		return fmt.Errorf("%w: redis %s: %s: the server holds height %d of prefix %q, above the %d this peer applied",
			statedb.ErrUnavailable, d.addr, op, h, d.prefix, floor)
	}
}

func (d *DB) unavailable(op string, err error) error {
	return fmt.Errorf("%w: redis %s: %s: %v", statedb.ErrUnavailable, d.addr, op, err)
}

// Apply implements statedb.DB: under WATCH of the savepoint, it checks
// that the server still holds the applied height, then writes the batch
// and the new savepoint in one MULTI/EXEC.
func (d *DB) Apply(b *statedb.Batch, height uint64, _ bool) error {
	if err := d.gate.Enter(); err != nil {
		return err
	}
	defer d.gate.Exit()
	d.mu.Lock()
	defer d.mu.Unlock()
	from := d.applied.Load()
	if err := statedb.CheckHeight(height, from); err != nil {
		return err
	}
	if err := b.CheckNamespaces(); err != nil {
		return err
	}
	if d.lost.Load() {
		return fmt.Errorf("%w: redis %s: Apply of height %d before the state was re-applied (call Savepoint)", statedb.ErrStateLost, d.addr, height)
	}
	puts, dels := d.encode(b)
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	op := fmt.Sprintf("Apply from %d to %d", from, height)
	err := d.cl.Watch(ctx, func(tx *redis.Tx) error {
		h, err := d.savepointOf(tx.Get(ctx, d.sp).Result())
		switch {
		case err != nil:
			return err
		case h == height:
			return nil // an earlier try wrote it; its answer was lost
		case h < from:
			return d.fence(op, h, from)
		case h != from:
			return fmt.Errorf("redisdb: redis %s: %s: the server holds height %d of prefix %q: another writer uses the prefix (give each peer its own, stateDB.redis.prefix)",
				d.addr, op, h, d.prefix)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for i := 0; i < len(puts); i += 2 * chunk {
				p.MSet(ctx, puts[i:min(i+2*chunk, len(puts))]...)
			}
			for i := 0; i < len(puts); i += 2 * chunk {
				members := make([]redis.Z, 0, chunk)
				for j := i; j < min(i+2*chunk, len(puts)); j += 2 {
					members = append(members, redis.Z{Member: puts[j].(string)[len(d.keys):]})
				}
				p.ZAdd(ctx, d.idx, members...)
			}
			for i := 0; i < len(dels); i += chunk {
				names, members := make([]string, 0, chunk), make([]any, 0, chunk)
				for _, k := range dels[i:min(i+chunk, len(dels))] {
					names, members = append(names, d.keys+k), append(members, k)
				}
				p.Del(ctx, names...)
				p.ZRem(ctx, d.idx, members...)
			}
			p.Set(ctx, d.sp, string(statedb.AppendSavepoint(nil, height)), 0)
			return nil
		})
		if err != nil {
			return d.unavailable(op, err)
		}
		return nil
	}, d.sp)
	if errors.Is(err, redis.TxFailedErr) {
		return d.unavailable(op, errors.New("the savepoint changed while the batch was sent; retry"))
	}
	if err != nil {
		return err
	}
	d.applied.Store(height)
	return nil
}

// encode returns the batch's final operation per key (later writes to a
// key win): puts as MSET's name, value pairs, deletes as encoded keys.
func (d *DB) encode(b *statedb.Batch) (puts []any, dels []string) {
	if b == nil {
		return nil, nil
	}
	last := make(map[string]int, len(b.Writes))
	for i := range b.Writes {
		last[string(statedb.AppendKey(nil, b.Writes[i].Namespace, b.Writes[i].Key))] = i
	}
	puts = make([]any, 0, 2*len(last))
	for k, i := range last {
		w := &b.Writes[i]
		if w.Delete {
			dels = append(dels, k)
			continue
		}
		puts = append(puts, d.keys+k, string(statedb.AppendValue(nil, statedb.Value{Data: w.Value, Version: w.Version})))
	}
	return puts, dels
}

// Savepoint implements statedb.DB: the applied height; once a loss was
// seen, the server's, at which the DB then starts over.
func (d *DB) Savepoint() (uint64, error) {
	if err := d.gate.Enter(); err != nil {
		return 0, err
	}
	defer d.gate.Exit()
	if !d.lost.Load() {
		return d.applied.Load(), nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.lost.Load() {
		return d.applied.Load(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	h, err := d.savepointOf(d.cl.Get(ctx, d.sp).Result())
	if err != nil {
		return 0, err
	}
	d.applied.Store(h)
	d.lost.Store(false)
	return h, nil
}

// Close implements statedb.DB. It waits for running calls to return.
func (d *DB) Close() error {
	if err := d.gate.Shut(); err != nil {
		return err
	}
	if err := d.cl.Close(); err != nil {
		return fmt.Errorf("redisdb: close: %w", err)
	}
	return nil
}
