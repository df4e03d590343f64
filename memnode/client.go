package memnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/internal/grpctune"
	"github.com/strand-ledger/strand/internal/latency"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
)

// ClientOptions configures a Client. Address and TLS are required.
type ClientOptions struct {
	// Address is the memory node's host:port.
	Address string
	// TLS is the client side of mutual TLS (node.TLSConfigs).
	TLS *tls.Config
	// CacheBytes bounds the local cache. Default 64 MiB; -1: no cache.
	CacheBytes int64
	// CallTimeout bounds one call (an Apply that waits for room in the
	// memory tier included). Default 30s.
	CallTimeout time.Duration
	// MaxMessageBytes bounds a message either way. Default 256 MiB.
	MaxMessageBytes int
	// Follow makes the client a reader: a compute node that simulates
	// and endorses on the state while only the peer's committer writes
	// it. Its cache follows the node's change feed (Watch) and its fence
	// the node's height; Apply fails with ErrReader. See Client.
	Follow bool
	// OnChange, with Follow, is called in the feed's goroutine after
	// each message is processed (the feed at height): with the
	// namespaces the batch wrote, or nil for a resync, after which any
	// namespace may differ from what the reader last saw. It must not
	// block. A compute node follows contract definitions with it.
	OnChange func(height uint64, namespaces []string)
}

// Client defaults.
const (
	keepaliveTime    = 10 * time.Second
	keepaliveTimeout = 5 * time.Second

	DefaultCacheBytes      = 64 << 20
	DefaultCallTimeout     = 30 * time.Second
	DefaultMaxMessageBytes = 256 << 20
)

func (o *ClientOptions) ensureDefaults() {
	statedb.SetDefault(&o.CacheBytes, DefaultCacheBytes)
	statedb.SetDefault(&o.CallTimeout, DefaultCallTimeout)
	statedb.SetDefault(&o.MaxMessageBytes, DefaultMaxMessageBytes)
}

// Client is the statedb.DB of a compute node whose state lives on a
// memory node: a local cache (tiered.Cache) in front of gRPC calls. It
// is the writer (the peer's committer, whose Apply writes its cache
// through) or, with ClientOptions.Follow, a reader.
//
// A reader, such as a compute node's state for simulation, is built so:
//
//	tlsConf, _ := node.TLSConfigs(...)   // client side of mutual TLS, as the peer's
//	state, err := memnode.Dial(memnode.ClientOptions{
//		Address:    "127.0.0.1:7070", // the peer's memory node
//		TLS:        tlsConf,
//		CacheBytes: 64 << 20,         // 0: 64 MiB; -1: no cache (every read goes to the node)
//		Follow:     true,
//	})
//	// state is a statedb.DB (and VersionGetter, Dumper) for the endorser;
//	// Apply fails with ErrReader. state.Synced(ctx, h) waits until the
//	// feed has reached height h (say, the height a client saw committed).
//	// state.Metrics().Feed says how stale the cache runs; export it as the
//	// peer does (node.NewStructCollector("memnode_client", ...)).
//	defer state.Close()
//
// Dial returns once the feed's first message is in, so the cache is live
// from the start. What keeps a reader's answers no older than its feed,
// and when its cache is dropped, is written above type follower; the
// writer's fence follows.
//
// The fence, the invariant that keeps a restarted memory node from
// serving old state as current: applied is the height this client last
// had acknowledged (or found at Open). Every read answer carries the
// height the node read at; an answer below applied means the node lost
// the blocks above its storage savepoint, and the read fails with
// statedb.ErrStateLost instead of returning it. Apply sends applied as
// its base (from), so a node that lost state refuses the batch the same
// way. Savepoint, once a loss was seen, asks the node again and starts
// the client over at the node's height: the caller then re-applies the
// blocks above it (committer recovery). Until then the cache, which
// describes applied, keeps answering with the state the caller applied.
type Client struct {
	opts  ClientOptions
	conn  *grpc.ClientConn
	rpc   api.MemoryNodeClient
	gate  statedb.Gate
	cache *tiered.Cache // nil when CacheBytes is -1
	// follow is a reader's feed; nil for the writer.
	follow *follower

	// mu orders Apply's publish (applied and the cache move together),
	// and a reader's processing of its feed, against the reads' cache
	// lookups.
	mu      sync.RWMutex
	applied atomic.Uint64
	lost    atomic.Bool
	// readAt is the highest height a read answer carried (at least the
	// height at Dial): a reader that never applies (a compute node) learns
	// the node's height from it, and it is part of the fence (the floor of
	// a read is ReadHeight), so a reader also meets a node that lost what
	// it had read.
	readAt  atomic.Uint64
	applyMu sync.Mutex // serialises Apply and Savepoint's start over
	// inflight is the writer's Apply in flight (nil: none), set and
	// cleared under mu: a read the node answered at its height, of a key
	// it does not write, is the key's state at the cache's height (from)
	// as well, so the answer is cached even though the client has not
	// yet heard that the node applied it.
	inflight *inflightBatch
	// batch joins the multi-gets that wait for a call slot (batch.go).
	batch readBatcher
	// reads is the read stream the multi-gets travel on (reads.go).
	reads readStreams

	cacheHits, remoteReads, unavailable, losses atomic.Uint64
	// The messages to the node, by kind (ClientMetrics).
	valueCalls, versionCalls, versionReads, applies, stalePuts atomic.Uint64
	callLat                                                    latency.Histogram
	readLat                                                    latency.Histogram // GetMany alone
}

var (
	_ statedb.DB            = (*Client)(nil)
	_ statedb.VersionGetter = (*Client)(nil)
	_ statedb.Dumper        = (*Client)(nil)
)

// ClientMetrics is a snapshot of a Client's counters.
type ClientMetrics struct {
	CacheHits   uint64 `metric:"counter"` // Reads the local cache answered.
	RemoteReads uint64 `metric:"counter"` // Keys read from the memory node.
	// The messages sent to the memory node, by kind: multi-gets of
	// values (an endorsement's reads), of versions only (the
	// committer's MVCC checks), and applied batches; a multi-get that
	// joined several reads (batch.go) is one message.
	ValueCalls   uint64           `metric:"counter"` // Multi-gets of values sent to the memory node.
	VersionCalls uint64           `metric:"counter"` // Multi-gets of versions only sent to the memory node.
	VersionReads uint64           `metric:"counter"` // Keys of RemoteReads read for their version only.
	Applies      uint64           `metric:"counter"` // Batches sent to the memory node (Apply calls).
	StalePuts    uint64           `metric:"counter"` // Keys read remotely (values or versions) the cache did not keep: read above its height, or a batch applied since may have written them (tiered.Cache.Put).
	Unavailable  uint64           `metric:"counter"` // Calls that found the memory node unreachable.
	Losses       uint64           `metric:"counter"` // Times the memory node was found below the applied height (it lost state).
	CacheBytes   int64            `metric:"gauge"`   // Bytes held by the local cache.
	Height       uint64           `metric:"gauge"`   // The applied height; a reader's: the highest the memory node showed it.
	CallLatency  latency.Snapshot // Latency of a call to the memory node: reads, applies, savepoints.
	ReadLatency  latency.Snapshot // Latency of a read that missed the local cache (a multi-get).
	Feed         FeedMetrics      // a reader's change feed; zero for the writer
}

// Dial connects to the memory node and reads its height, which becomes
// the client's savepoint. An unreachable node fails it with
// statedb.ErrUnavailable.
func Dial(opts ClientOptions) (*Client, error) {
	opts.ensureDefaults()
	if opts.Address == "" || opts.TLS == nil {
		return nil, fmt.Errorf("memnode: client needs an address and a TLS configuration (mutual TLS), got address %q", opts.Address)
	}
	// Static flow-control windows, as on every strand connection: with
	// gRPC's dynamic ones each burst of answers also carried a BDP ping
	// and its ack (package grpctune).
	conn, err := grpc.NewClient(opts.Address, append(grpctune.DialOptions(),
		grpc.WithTransportCredentials(credentials.NewTLS(opts.TLS)),
		// Reconnect within a second of a restarted node listening again
		// (gRPC's default backoff grows to two minutes).
		grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: 2 * time.Second,
			Backoff: backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}}),
		// A reader's feed is a stream that may stay silent for long:
		// pings find a dead connection within keepaliveTime+Timeout.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTimeout, PermitWithoutStream: true}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(opts.MaxMessageBytes), grpc.MaxCallSendMsgSize(opts.MaxMessageBytes)))...)
	if err != nil {
		return nil, fmt.Errorf("memnode: client for %s: %w", opts.Address, err)
	}
	c := &Client{opts: opts, conn: conn, rpc: api.NewMemoryNodeClient(conn)}
	sp, err := c.remoteSavepoint()
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	c.applied.Store(sp)
	c.readAt.Store(sp)
	if opts.CacheBytes > 0 {
		c.cache = tiered.NewCache(opts.CacheBytes, sp)
	}
	if opts.Follow {
		c.cache.Reset(notLive) // until the feed's first resync
		if err := c.startFollow(); err != nil {
			_ = conn.Close()
			return nil, err
		}
	}
	return c, nil
}

// callErr names the node and the call, and marks the retryable failures.
func (c *Client) callErr(op string, err error) error {
	st := status.Convert(err)
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		c.unavailable.Add(1)
		return fmt.Errorf("%w: memnode %s: %s: %s", statedb.ErrUnavailable, c.opts.Address, op, st.Message())
	case codes.ResourceExhausted:
		if strings.HasPrefix(st.Message(), "memnode:") {
			// A client limit (Limits): load that passes, so retryable,
			// lest the committer take it for a failure of the node.
			c.unavailable.Add(1)
			return fmt.Errorf("%w: memnode %s: %s: %s", statedb.ErrUnavailable, c.opts.Address, op, st.Message())
		}
		// gRPC's own: a message over the size bound, which no retry
		// mends.
		return fmt.Errorf("memnode %s: %s: %s: %s (the bounds: maxMessageMB in the memory node's file, ClientOptions.MaxMessageBytes here)",
			c.opts.Address, op, st.Code(), st.Message())
	}
	return fmt.Errorf("memnode %s: %s: %s: %s", c.opts.Address, op, st.Code(), st.Message())
}

// lostErr records that the node answered from height h, below floor,
// a height it had acknowledged.
func (c *Client) lostErr(op string, h, floor uint64) error {
	c.losses.Add(1)
	if c.follow != nil {
		c.follow.drop()
		return fmt.Errorf("%w: memnode %s: %s: the node is at height %d, below the %d it showed this reader; it answers again once the peer has re-applied its blocks",
			statedb.ErrStateLost, c.opts.Address, op, h, floor)
	}
	c.lost.Store(true)
	return fmt.Errorf("%w: memnode %s: %s: the node is at height %d, this peer applied %d",
		statedb.ErrStateLost, c.opts.Address, op, h, floor)
}

func (c *Client) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.opts.CallTimeout)
}

func (c *Client) remoteSavepoint() (uint64, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	defer c.callLat.Since(time.Now())
	resp, err := c.rpc.Savepoint(ctx, &api.MemSavepointRequest{})
	if err != nil {
		return 0, c.callErr("Savepoint", err)
	}
	return resp.GetHeight(), nil
}

// Get implements statedb.DB.
func (c *Client) Get(ns, key string) (statedb.Value, bool, error) {
	var out [1]statedb.Result
	if err := c.GetMany([]statedb.Key{{Namespace: ns, Key: key}}, out[:]); err != nil {
		return statedb.Value{}, false, err
	}
	return out[0].Value, out[0].Found, nil
}

// GetMany implements statedb.DB: the cache's answers, and one call for
// the rest.
func (c *Client) GetMany(keys []statedb.Key, out []statedb.Result) error {
	var s statedb.KeySet
	if err := s.Load(keys, out); err != nil {
		return err
	}
	return c.read(keys, &s, false, func(i int, r statedb.Result) { out[i] = r })
}

// GetVersions implements statedb.VersionGetter; values are not sent.
func (c *Client) GetVersions(keys []statedb.Key, out []statedb.VersionResult) error {
	var s statedb.KeySet
	if err := s.LoadN(keys, len(out)); err != nil {
		return err
	}
	return c.read(keys, &s, true, func(i int, r statedb.Result) {
		out[i] = statedb.VersionResult{Version: r.Value.Version, Found: r.Found}
	})
}

func (c *Client) read(keys []statedb.Key, s *statedb.KeySet, versionsOnly bool, fill func(int, statedb.Result)) error {
	if err := c.gate.Enter(); err != nil {
		return err
	}
	defer c.gate.Exit()
	var missed []int
	var now int64 // a reader stamps its hits, to count the stale ones
	if c.follow != nil {
		now = time.Now().UnixNano()
	}
	c.mu.RLock()
	for _, i := range s.Order() {
		var r statedb.Result
		var ok bool
		if versionsOnly { // no copy of a value the caller drops
			r.Value.Version, r.Found, ok = c.cache.VersionAt(string(s.Key(i)), now)
		} else {
			r.Value, r.Found, ok = c.cache.GetAt(string(s.Key(i)), now)
		}
		if ok {
			fill(i, r)
			c.cacheHits.Add(1)
			continue
		}
		missed = append(missed, i)
	}
	c.mu.RUnlock()
	if len(missed) == 0 {
		return nil
	}
	mk := make([]*api.MemKey, len(missed))
	for j, i := range missed {
		mk[j] = &api.MemKey{Namespace: []byte(keys[i].Namespace), Key: []byte(keys[i].Key)}
	}
	height, values, err := c.batch.get(mk, versionsOnly, c.getMany)
	if err != nil {
		return err
	}
	c.remoteReads.Add(uint64(len(missed)))
	if versionsOnly {
		c.versionReads.Add(uint64(len(missed)))
	}
	c.mu.RLock() // the Apply in flight stays the same while the answers are cached
	for j, i := range missed {
		r := decodeValue(values[j])
		key := string(s.Key(i))
		at := height
		if p := c.inflight; p != nil && height == p.to {
			if _, written := p.keys[key]; !written {
				at = p.from // its state at to is its state at from, the cache's height
			}
		}
		var kept bool
		if versionsOnly { // the version alone, for the next MVCC check
			kept = c.cache.PutVersion(at, key, r.Value.Version, r.Found)
		} else {
			kept = c.cache.Put(at, key, r.Value, r.Found)
		}
		if !kept {
			c.stalePuts.Add(1)
		}
		fill(i, r)
	}
	c.mu.RUnlock()
	return nil
}

// getMany is one multi-get (the batcher's), sent on the read stream:
// the height the node read at and a value for each key, fenced.
func (c *Client) getMany(keys []*api.MemKey, versionsOnly bool) (uint64, []*api.MemValue, error) {
	// The fence is read before the call: a height acknowledged by then
	// is one the node held before it read, and each read of the call
	// began before it, so the floor is at least that read's own.
	floor := c.ReadHeight()
	if versionsOnly {
		c.versionCalls.Add(1)
	} else {
		c.valueCalls.Add(1)
	}
	start := time.Now()
	resp, err := c.streamGet(keys, versionsOnly)
	c.callLat.Since(start)
	c.readLat.Since(start)
	if err == nil && resp.GetCode() != 0 {
		err = status.Error(codes.Code(resp.GetCode()), resp.GetMessage())
	}
	if err != nil {
		return 0, nil, c.callErr("GetMany", err)
	}
	if len(resp.GetValues()) != len(keys) {
		return 0, nil, fmt.Errorf("memnode %s: GetMany answered %d values for %d keys", c.opts.Address, len(resp.GetValues()), len(keys))
	}
	if h := resp.GetHeight(); h < floor {
		return 0, nil, c.lostErr("GetMany", h, floor)
	}
	c.sawHeight(resp.GetHeight())
	if c.follow != nil {
		raise(&c.applied, resp.GetHeight())
	}
	return resp.GetHeight(), resp.GetValues(), nil
}

// Scan implements statedb.DB: one streamed call, read at one height on
// the node, a page at a time, the next asked for only when fn has taken
// the last; it does not use the cache.
func (c *Client) Scan(ns, start, end string, fn func(key string, v statedb.Value) bool) error {
	if err := c.gate.Enter(); err != nil {
		return err
	}
	defer c.gate.Exit()
	if err := statedb.CheckNamespace(ns); err != nil {
		return err
	}
	if statedb.EmptyRange(start, end) {
		return nil
	}
	_, err := c.stream("Scan", &api.MemScanRequest{Namespace: []byte(ns), Start: []byte(start), End: []byte(end)},
		func(k []byte, v statedb.Value) (bool, error) { return fn(string(k), v), nil })
	return err
}

// Dump implements statedb.Dumper: every key of every namespace, at one
// height, which it returns.
func (c *Client) Dump(fn func(ns, key string, v statedb.Value) error) (uint64, error) {
	if err := c.gate.Enter(); err != nil {
		return 0, err
	}
	defer c.gate.Exit()
	return c.stream("Dump", &api.MemScanRequest{All: true}, func(k []byte, v statedb.Value) (bool, error) {
		ns, key, err := statedb.SplitKey(k)
		if err != nil {
			return false, fmt.Errorf("memnode %s: Dump: %w", c.opts.Address, err)
		}
		return true, fn(ns, key, v)
	})
}

// stream runs a Scan call, checks its height against the fence and hands
// every key to fn until fn returns false or an error. It returns the
// height read.
func (c *Client) stream(op string, req *api.MemScanRequest, fn func(k []byte, v statedb.Value) (bool, error)) (uint64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // ends the stream when fn stops early
	floor := c.ReadHeight()
	stream, err := c.rpc.Scan(ctx)
	if err == nil {
		err = stream.Send(req)
	}
	if err != nil {
		return 0, c.callErr(op, err)
	}
	var height uint64
	for first := true; ; first = false {
		if !first {
			if err := stream.Send(&api.MemScanRequest{}); err != nil && !errors.Is(err, io.EOF) {
				return 0, c.callErr(op, err)
			} // on io.EOF the server has ended the stream: Recv says why
		}
		// Each page is awaited under the call timeout: a long scan is
		// fine, a silent node is not.
		page, err := recvWithin(stream, c.opts.CallTimeout, cancel)
		if errors.Is(err, io.EOF) {
			return height, nil
		}
		if err != nil {
			return 0, c.callErr(op, err)
		}
		if first {
			if height = page.GetHeight(); height < floor {
				return 0, c.lostErr(op, height, floor)
			}
			c.sawHeight(height)
			if c.follow != nil {
				raise(&c.applied, height)
			}
		}
		if len(page.GetKeys()) != len(page.GetValues()) {
			return 0, fmt.Errorf("memnode %s: %s page of %d keys and %d values", c.opts.Address, op, len(page.GetKeys()), len(page.GetValues()))
		}
		for i, k := range page.GetKeys() {
			if ok, err := fn(k, decodeValue(page.Values[i]).Value); !ok || err != nil {
				return height, err
			}
		}
	}
}

// recvWithin receives the next page, cancelling the stream if none comes
// within d.
func recvWithin(stream api.MemoryNode_ScanClient, d time.Duration, cancel context.CancelFunc) (*api.MemScanPage, error) {
	t := time.AfterFunc(d, cancel)
	defer t.Stop()
	return stream.Recv()
}

// Apply implements statedb.DB. It sends the batch with the applied
// height as its base; a node that lost state refuses it and Apply
// returns statedb.ErrStateLost.
func (c *Client) Apply(b *statedb.Batch, height uint64, sync bool) error {
	if err := c.gate.Enter(); err != nil {
		return err
	}
	defer c.gate.Exit()
	if c.follow != nil {
		return fmt.Errorf("%w: memnode %s: Apply of height %d by a client with ClientOptions.Follow", ErrReader, c.opts.Address, height)
	}
	c.applyMu.Lock()
	defer c.applyMu.Unlock()
	from := c.applied.Load()
	if err := statedb.CheckHeight(height, from); err != nil {
		return err
	}
	if err := b.CheckNamespaces(); err != nil {
		return err
	}
	if c.lost.Load() {
		return fmt.Errorf("%w: memnode %s: Apply of height %d before the state was re-applied (call Savepoint)", statedb.ErrStateLost, c.opts.Address, height)
	}
	var writes []statedb.Write
	if b != nil {
		writes = b.Writes
	}
	if c.cache != nil {
		p := &inflightBatch{from: from, to: height, keys: make(map[string]struct{}, len(writes))}
		for _, w := range writes {
			p.keys[string(statedb.AppendKey(nil, w.Namespace, w.Key))] = struct{}{}
		}
		c.mu.Lock()
		c.inflight = p
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.inflight = nil
			c.mu.Unlock()
		}()
	}
	ctx, cancel := c.ctx()
	defer cancel()
	start := time.Now()
	c.applies.Add(1)
	resp, err := c.rpc.Apply(ctx, encodeApply(b, from, height, sync))
	c.callLat.Since(start)
	if err != nil {
		return c.callErr(fmt.Sprintf("Apply of height %d", height), err)
	}
	if !resp.GetApplied() {
		return c.lostErr(fmt.Sprintf("Apply from %d to %d", from, height), resp.GetHeight(), from)
	}
	c.mu.Lock()
	c.applied.Store(height)
	c.cache.Apply(writes, height)
	c.inflight = nil
	c.mu.Unlock()
	return nil
}

// inflightBatch is the batch of an Apply in flight: from and to heights
// and the encoded keys it writes.
type inflightBatch struct {
	from, to uint64
	keys     map[string]struct{}
}

// Savepoint implements statedb.DB: the applied height; once the node was
// found to have lost state, the node's height, at which the client then
// starts over (cache emptied). A reader's is the node's height, fenced
// as its reads are.
func (c *Client) Savepoint() (uint64, error) {
	if c.gate.Closed() {
		return 0, statedb.ErrClosed
	}
	if c.follow != nil {
		floor := c.applied.Load()
		h, err := c.remoteSavepoint()
		if err != nil {
			return 0, err
		}
		if h < floor {
			return 0, c.lostErr("Savepoint", h, floor)
		}
		raise(&c.applied, h)
		return h, nil
	}
	if !c.lost.Load() {
		return c.applied.Load(), nil
	}
	c.applyMu.Lock()
	defer c.applyMu.Unlock()
	if !c.lost.Load() {
		return c.applied.Load(), nil
	}
	sp, err := c.remoteSavepoint()
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.applied.Store(sp)
	c.readAt.Store(sp)
	c.cache.Reset(sp)
	c.mu.Unlock()
	c.lost.Store(false)
	return sp, nil
}

// sawHeight raises ReadHeight to h.
func (c *Client) sawHeight(h uint64) {
	for {
		r := c.readAt.Load()
		if h <= r || c.readAt.CompareAndSwap(r, h) {
			return
		}
	}
}

// ReadHeight is the highest height a read answer of the node carried, or
// the applied height if that is higher: a lower bound of the height the
// next read reads at, unless the node loses state. A compute node, which
// reads and never applies, reports it as its height.
func (c *Client) ReadHeight() uint64 {
	return max(c.readAt.Load(), c.applied.Load())
}

// FeedHeight is, for a reader, its change feed's height: every answer,
// a cache hit or a read of the node, is of state at a height no lower
// than the feed's when the read began (type follower), which ReadHeight
// is not for a hit. A compute node reports it as the height its
// simulations read at, and waits for it with Synced. For the writer,
// whose cache is written through, it is the applied height.
func (c *Client) FeedHeight() uint64 {
	if c.follow == nil {
		return c.applied.Load()
	}
	return c.follow.height.Load()
}

// Close implements statedb.DB; the memory node keeps running.
func (c *Client) Close() error {
	if err := c.gate.Shut(); err != nil {
		return err
	}
	if c.follow != nil {
		c.follow.stop()
	}
	c.reads.close()
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("memnode: closing the connection to %s: %w", c.opts.Address, err)
	}
	return nil
}

// Metrics returns the client's counters.
func (c *Client) Metrics() ClientMetrics {
	return ClientMetrics{CacheHits: c.cacheHits.Load(), RemoteReads: c.remoteReads.Load(), Unavailable: c.unavailable.Load(),
		ValueCalls: c.valueCalls.Load(), VersionCalls: c.versionCalls.Load(), VersionReads: c.versionReads.Load(),
		Applies: c.applies.Load(), StalePuts: c.stalePuts.Load(),
		Losses: c.losses.Load(), CacheBytes: c.cache.Size(), Height: c.applied.Load(), CallLatency: c.callLat.Snapshot(),
		ReadLatency: c.readLat.Snapshot(), Feed: c.follow.metrics()}
}
