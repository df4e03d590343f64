package redisdb

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// A scan asks the server for firstPage keys, doubling from page to page
// up to maxPage, so that a scan the caller stops early costs little.
const (
	firstPage = 128
	maxPage   = 512
)

// read runs fn under the read lock inside the gate, with the fence's
// floor: the applied height, which no Apply moves meanwhile.
func (d *DB) read(fn func(ctx context.Context, floor uint64) error) error {
	if err := d.gate.Enter(); err != nil {
		return err
	}
	defer d.gate.Exit()
	d.mu.RLock()
	defer d.mu.RUnlock()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	return fn(ctx, d.applied.Load())
}

// mget fetches names and the savepoint in one MGET (atomic on the
// server), fences the savepoint and calls fn for each name that exists.
func (d *DB) mget(ctx context.Context, op string, floor uint64, names []string, fn func(i int, val []byte) error) error {
	vals, err := d.cl.MGet(ctx, append(names, d.sp)...).Result()
	if err != nil {
		return d.unavailable(op, err)
	}
	if len(vals) != len(names)+1 {
		return d.unavailable(op, fmt.Errorf("MGET answered %d values for %d keys", len(vals), len(names)+1))
	}
	if err := d.fenceAnswer(op, vals[len(names)], floor); err != nil {
		return err
	}
	for i, v := range vals[:len(names)] {
		if s, ok := v.(string); ok {
			if err := fn(i, []byte(s)); err != nil {
				return err
			}
		}
	}
	return nil
}

// fenceAnswer fences a savepoint as MGET returned it (nil: absent).
func (d *DB) fenceAnswer(op string, v any, floor uint64) error {
	var raw string
	var missing error = redis.Nil
	if s, ok := v.(string); ok {
		raw, missing = s, nil
	}
	h, err := d.savepointOf(raw, missing)
	if err != nil {
		return err
	}
	return d.fence(op, h, floor)
}

// Get implements statedb.DB.
func (d *DB) Get(ns, key string) (v statedb.Value, found bool, err error) {
	if err := statedb.CheckNamespace(ns); err != nil {
		return statedb.Value{}, false, err
	}
	err = d.read(func(ctx context.Context, floor uint64) error {
		return d.mget(ctx, "get", floor, []string{d.keys + string(statedb.AppendKey(nil, ns, key))}, func(_ int, val []byte) (err error) {
			v, err = statedb.DecodeValue(val)
			found = err == nil
			if err != nil {
				return fmt.Errorf("redisdb: get %q in namespace %q: %w", key, ns, err)
			}
			return nil
		})
	})
	if err != nil {
		return statedb.Value{}, false, err
	}
	return v, found, nil
}

// GetMany implements statedb.DB in one round trip: one MGET of every key
// and the savepoint.
func (d *DB) GetMany(keys []statedb.Key, out []statedb.Result) error {
	for i := range out {
		out[i] = statedb.Result{}
	}
	return d.getEach(keys, len(out), func(i int, val []byte) (err error) {
		out[i].Value, err = statedb.DecodeValue(val)
		out[i].Found = err == nil
		return err
	})
}

// GetVersions implements statedb.VersionGetter as GetMany does, decoding
// only the versions.
func (d *DB) GetVersions(keys []statedb.Key, out []statedb.VersionResult) error {
	for i := range out {
		out[i] = statedb.VersionResult{}
	}
	return d.getEach(keys, len(out), func(i int, val []byte) (err error) {
		out[i].Version, err = statedb.DecodeVersion(val)
		out[i].Found = err == nil
		return err
	})
}

// getEach checks the keys against n results, then fetches them in one
// round trip (MGETs of at most chunk keys, pipelined; the savepoint is
// fetched with each and fenced).
func (d *DB) getEach(keys []statedb.Key, n int, fn func(i int, val []byte) error) error {
	if len(keys) != n {
		return fmt.Errorf("redisdb: %w: %d keys, %d results", statedb.ErrLengthsMismatch, len(keys), n)
	}
	if len(keys) == 0 {
		return nil
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		if err := statedb.CheckNamespace(k.Namespace); err != nil {
			return fmt.Errorf("key %d of GetMany: %w", i, err)
		}
		names[i] = d.keys + string(statedb.AppendKey(nil, k.Namespace, k.Key))
	}
	return d.read(func(ctx context.Context, floor uint64) error {
		if len(names) <= chunk {
			return d.mget(ctx, "GetMany", floor, names, fn)
		}
		p := d.cl.Pipeline()
		var cmds []*redis.SliceCmd
		for i := 0; i < len(names); i += chunk {
			cmds = append(cmds, p.MGet(ctx, append(names[i:min(i+chunk, len(names)):min(i+chunk, len(names))], d.sp)...))
		}
		if _, err := p.Exec(ctx); err != nil {
			return d.unavailable("GetMany", err)
		}
		for c, cmd := range cmds {
			vals := cmd.Val()
			if err := d.fenceAnswer("GetMany", vals[len(vals)-1], floor); err != nil {
				return err
			}
			for j, v := range vals[:len(vals)-1] {
				if s, ok := v.(string); ok {
					if err := fn(c*chunk+j, []byte(s)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// Scan implements statedb.DB.
func (d *DB) Scan(ns, start, end string, fn func(key string, v statedb.Value) bool) error {
	if err := statedb.CheckNamespace(ns); err != nil {
		return err
	}
	if statedb.EmptyRange(start, end) {
		return nil
	}
	lower, upper := statedb.AppendScanBounds(nil, ns, start, end)
	return d.read(func(ctx context.Context, floor uint64) error {
		return d.iterate(ctx, "scan "+ns, floor, lower, upper, func(k []byte, v statedb.Value) bool {
			return fn(string(k[len(ns)+1:]), v)
		})
	})
}

// Dump implements statedb.Dumper: every key of every namespace, at the
// applied height (fenced).
func (d *DB) Dump(fn func(ns, key string, v statedb.Value) error) (uint64, error) {
	var sp uint64
	var fnErr error
	err := d.read(func(ctx context.Context, floor uint64) error {
		sp = floor
		return d.iterate(ctx, "dump", floor, statedb.DumpLower, statedb.DumpUpper, func(k []byte, v statedb.Value) bool {
			ns, key, err := statedb.SplitKey(k)
			if err == nil {
				err = fn(ns, key, v)
			}
			fnErr = err
			return err == nil
		})
	})
	if err == nil {
		err = fnErr
	}
	return sp, err
}

// pageScript reads one page of a scan atomically, in one round trip:
// the encoded keys in the range (ZRANGEBYLEX), their values (MGET) and
// the savepoint. KEYS: the index, the savepoint; ARGV: min, max, count,
// the values' key prefix.
var pageScript = redis.NewScript(`
local m = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local vals = {}
if #m > 0 then
  local names = {}
  for i, k in ipairs(m) do names[i] = ARGV[4] .. k end
  vals = redis.call('MGET', unpack(names))
end
return {redis.call('GET', KEYS[2]), m, vals}
`)

// iterate calls fn for each encoded key in [lower, upper) in order, a
// page at a time (pageScript: the page, its values and the savepoint
// from one point in time, fenced).
func (d *DB) iterate(ctx context.Context, op string, floor uint64, lower, upper []byte, fn func(k []byte, v statedb.Value) bool) error {
	lo, hi := "["+string(lower), "("+string(upper)
	for count := firstPage; ; count = min(2*count, maxPage) {
		res, err := pageScript.Run(ctx, d.cl, []string{d.idx, d.sp}, lo, hi, count, d.keys).Slice()
		if err != nil {
			return d.unavailable(op, err)
		}
		if len(res) != 3 {
			return d.unavailable(op, fmt.Errorf("a scan page of %d parts, want 3", len(res)))
		}
		if err := d.fenceAnswer(op, res[0], floor); err != nil {
			return err
		}
		page, _ := res[1].([]any)
		vals, _ := res[2].([]any)
		if len(vals) != len(page) {
			return d.unavailable(op, fmt.Errorf("a scan page of %d keys and %d values", len(page), len(vals)))
		}
		for i, m := range page {
			k, _ := m.(string)
			raw, ok := vals[i].(string)
			if !ok {
				return fmt.Errorf("%w: redis %s: key %q is in the index %q without a value", statedb.ErrCorrupt, d.addr, k, d.idx)
			}
			v, err := statedb.DecodeValue([]byte(raw))
			if err != nil {
				return fmt.Errorf("redisdb: %s at key %q: %w", op, k, err)
			}
			if !fn([]byte(k), v) {
				return nil
			}
		}
		if len(page) < count {
			return nil
		}
		lo = "(" + page[len(page)-1].(string)
	}
}
