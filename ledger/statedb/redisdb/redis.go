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

	"github.com/redis/go-redis/v9"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/engine"
)

// Format is the directory's claim: the state itself is on the server.
var Format = statedb.Format{Backend: "redis", Version: 1}

// scanPage is how many keys Iterate asks the server for at a time.
const scanPage = 256

// Open connects to the server in opts and opens the state database of
// dir there (dir holds only the Format claim). An unreachable server
// fails it with statedb.ErrUnavailable.
func Open(dir string, opts Options) (*engine.DB, error) {
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
	cl := redis.NewClient(&redis.Options{Network: network, Addr: opts.Address, DB: opts.Database, Password: opts.Password})
	if err := cl.Ping(context.Background()).Err(); err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("%w: redis %s: %v", statedb.ErrUnavailable, opts.Address, err)
	}
	d, err := engine.New("redis", &store{cl: cl, addr: opts.Address, keys: prefix + "k", idx: prefix + "idx"})
	if err != nil {
		_ = cl.Close()
		return nil, err
	}
	return d, nil
}

// store is the engine.Engine on a Redis server.
type store struct {
	cl         *redis.Client
	addr       string
	keys, idx  string
	mu         sync.RWMutex // Write's write lock against the snapshots' read locks
	closeOnce  sync.Once
	closeError error
}

// Write runs b in one MULTI/EXEC transaction: each put sets the value
// and adds the key to the index, each delete removes both.
func (s *store) Write(b *engine.Batch, _ bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx := context.Background()
	_, err := s.cl.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i := range b.Len() {
			key, val, del := b.Op(i)
			if del {
				p.Del(ctx, s.keys+string(key))
				p.ZRem(ctx, s.idx, string(key))
			} else {
				p.Set(ctx, s.keys+string(key), string(val), 0)
				p.ZAdd(ctx, s.idx, redis.Z{Member: string(key)})
			}
		}
		return nil
	})
	if err != nil {
		return s.err("write", err)
	}
	return nil
}

func (s *store) err(op string, err error) error {
	return fmt.Errorf("%w: redis %s: %s: %v", statedb.ErrUnavailable, s.addr, op, err)
}

// Snapshot holds the read lock until Release: no Write runs meanwhile.
func (s *store) Snapshot() (engine.Snapshot, error) {
	s.mu.RLock()
	return &snapshot{s: s}, nil
}

func (s *store) Close() error { return s.cl.Close() }

type snapshot struct {
	s    *store
	once sync.Once
}

func (sn *snapshot) Get(key []byte, fn func([]byte) error) (bool, error) {
	val, err := sn.s.cl.Get(context.Background(), sn.s.keys+string(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, sn.s.err("get", err)
	}
	return true, fn(val)
}

// Iterate pages through the index (ZRANGEBYLEX) and fetches each page's
// values (MGET).
func (sn *snapshot) Iterate(lower, upper []byte, fn func(key, val []byte) bool) error {
	ctx := context.Background()
	rng := &redis.ZRangeBy{Min: "[" + string(lower), Max: "+", Count: scanPage}
	if upper != nil {
		rng.Max = "(" + string(upper)
	}
	for {
		members, err := sn.s.cl.ZRangeByLex(ctx, sn.s.idx, rng).Result()
		if err != nil {
			return sn.s.err("scan", err)
		}
		if len(members) == 0 {
			return nil
		}
		names := make([]string, len(members))
		for i, m := range members {
			names[i] = sn.s.keys + m
		}
		vals, err := sn.s.cl.MGet(ctx, names...).Result()
		if err != nil {
			return sn.s.err("scan", err)
		}
		for i, v := range vals {
			str, ok := v.(string)
			if !ok {
				return fmt.Errorf("%w: redis %s: key %q is in the index without a value", statedb.ErrCorrupt, sn.s.addr, members[i])
			}
			if !fn([]byte(members[i]), []byte(str)) {
				return nil
			}
		}
		if len(members) < scanPage {
			return nil
		}
		rng.Offset += int64(len(members))
	}
}

func (sn *snapshot) Release() { sn.once.Do(sn.s.mu.RUnlock) }
