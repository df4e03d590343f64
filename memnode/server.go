package memnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/internal/latency"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
)

// Scan pages: a page is sent once it holds pageKeys keys (the first
// firstPageKeys, doubling from page to page, so that a scan the caller
// stops early costs little) or pageBytes.
const (
	firstPageKeys = 16
	pageKeys      = 512
	pageBytes     = 1 << 20
)

// service implements api.MemoryNodeServer over the memory and storage
// tiers of a tiered.DB opened without a cache.
//
// Apply's rule, what makes a re-sent batch harmless and a gap visible:
// under mu, a batch whose from is the published height is applied; one
// whose height is at or below the published height, from below it, is
// one the node already holds (its answer was lost) and is acknowledged
// without a write; any other is refused with the published height, which
// after a restart is the storage savepoint. The rule holds for one
// writer (the peer's committer) only: two would pass each other's
// batches as re-sent. So Apply is taken from one client certificate's
// common name: the configured writer, or else the first to Apply, until
// the node restarts; anyone else is refused (PermissionDenied).
type service struct {
	api.UnimplementedMemoryNodeServer
	db     *tiered.DB
	writer string     // the configured writer's common name; "": the first to Apply
	mu     sync.Mutex // serialises Apply's check and write, and guards claimed
	// claimed is the writer once one applied (or was configured).
	claimed *string
	// applied, when set (tests only), runs after each batch is applied
	// and published and before its answer is sent.
	applied atomic.Pointer[func(height uint64)]
	feed    *hub      // the Watch subscribers
	streams streamSet // the open read streams (reads.go)
	limits  *limiter  // each client's calls; nil in tests that call the service directly

	gets, scans, applies, resent, refused atomic.Uint64
	getLat, scanLat, applyLat             latency.Histogram
}

// newService serves db, whose published height the feed starts at; the
// epoch is drawn at random.
func newService(db *tiered.DB, writer string, watchBuffer int) (*service, error) {
	height, err := db.Savepoint()
	if err != nil {
		return nil, fmt.Errorf("memnode: %w", err)
	}
	return &service{db: db, writer: writer, feed: newHub(height, time.Now().UnixNano(), rand.Uint64(), watchBuffer)}, nil
}

// Metrics is a snapshot of a memory node's counters.
type Metrics struct {
	Tiers        tiered.Metrics   // bytes held, hits per tier, flushes, evictions
	Gets         uint64           `metric:"counter"` // Multi-get calls served.
	Scans        uint64           `metric:"counter"` // Range scans served.
	Applies      uint64           `metric:"counter"` // Batches applied.
	Resent       uint64           `metric:"counter"` // Batches acknowledged as already held (a writer's re-send).
	Refused      uint64           `metric:"counter"` // Batches refused: not from the published height, or not from the writer.
	Watchers     int              `metric:"gauge"`   // Watch subscribers (readers following the change feed).
	Overflows    uint64           `metric:"counter"` // Watch subscribers that fell behind and were sent a resync.
	OverLimit    uint64           `metric:"counter"` // Calls refused by a per-client limit.
	GetLatency   latency.Snapshot // Latency of a multi-get, server side.
	ScanLatency  latency.Snapshot // Latency of a range scan, server side.
	ApplyLatency latency.Snapshot // Latency of an apply, server side.
}

// String formats m on a few lines.
func (m Metrics) String() string {
	return fmt.Sprintf("%scalls: %d gets, %d scans, %d applies (%d re-sent, %d refused)\n"+
		"watch: %d subscribers, %d fell behind; %d calls over a client's limit\nlatency: get %v, scan %v, apply %v\n",
		m.Tiers, m.Gets, m.Scans, m.Applies, m.Resent, m.Refused, m.Watchers, m.Overflows, m.OverLimit, m.GetLatency, m.ScanLatency, m.ApplyLatency)
}

func (s *service) metrics() Metrics {
	var over uint64
	if s.limits != nil {
		over = s.limits.refused.Load()
	}
	return Metrics{OverLimit: over, Tiers: s.db.Metrics(), Gets: s.gets.Load(), Scans: s.scans.Load(), Applies: s.applies.Load(),
		Resent: s.resent.Load(), Refused: s.refused.Load(), Watchers: s.feed.watchers(), Overflows: s.feed.overflows.Load(),
		GetLatency: s.getLat.Snapshot(), ScanLatency: s.scanLat.Snapshot(), ApplyLatency: s.applyLat.Snapshot()}
}

// statusOf maps a tiers' error to a gRPC status that names it.
func statusOf(op string, err error) error {
	code := codes.Internal
	switch {
	case errors.Is(err, ErrBadRequest), errors.Is(err, statedb.ErrBadNamespace), errors.Is(err, statedb.ErrSavepointOrder):
		code = codes.InvalidArgument
	case errors.Is(err, statedb.ErrClosed):
		code = codes.Unavailable
	}
	return status.Errorf(code, "memnode: %s: %v", op, err)
}

func (s *service) GetMany(_ context.Context, req *api.MemGetRequest) (*api.MemGetResponse, error) {
	defer s.getLat.Since(time.Now())
	s.gets.Add(1)
	keys, err := decodeKeys(req.GetKeys())
	if err != nil {
		return nil, statusOf("GetMany", err)
	}
	out := make([]statedb.Result, len(keys))
	h, err := s.db.GetManyShared(keys, out)
	if err != nil {
		return nil, statusOf("GetMany", err)
	}
	resp := &api.MemGetResponse{Height: h, Values: make([]*api.MemValue, len(out))}
	for i, r := range out {
		resp.Values[i] = encodeValue(r, req.GetVersionsOnly())
	}
	return resp, nil
}

// Scan serves one range, a page per request (the first request names
// it), holding one view of the tiers (one height) for the whole stream.
// It reads only as far as the caller asks: a page ahead at most.
func (s *service) Scan(stream api.MemoryNode_ScanServer) error {
	defer s.scanLat.Since(time.Now())
	s.scans.Add(1)
	req, err := stream.Recv()
	if err != nil {
		return err
	}
	page := &api.MemScanPage{}
	size, limit := 0, firstPageKeys
	var streamErr error
	// next sends the full page and waits for the request of the next.
	next := func() bool {
		if streamErr = stream.Send(page); streamErr == nil {
			_, streamErr = stream.Recv()
		}
		page.Keys, page.Values, size, limit = page.Keys[:0], page.Values[:0], 0, min(2*limit, pageKeys)
		return streamErr == nil
	}
	add := func(key []byte, v statedb.Value) bool {
		page.Keys = append(page.Keys, key)
		page.Values = append(page.Values, encodeValue(statedb.Result{Value: v, Found: true}, false))
		size += len(key) + len(v.Data)
		if len(page.Keys) >= limit || size >= pageBytes {
			return next()
		}
		return true
	}
	at := func(h uint64) { page.Height = h }
	if req.GetAll() {
		errStop := errors.New("stopped")
		_, err = s.db.DumpAt(at, func(ns, key string, v statedb.Value) error {
			if !add(statedb.AppendKey(nil, ns, key), v) {
				return errStop
			}
			return nil
		})
		if errors.Is(err, errStop) {
			err = nil
		}
	} else {
		err = s.db.ScanAt(string(req.GetNamespace()), string(req.GetStart()), string(req.GetEnd()), at,
			func(key string, v statedb.Value) bool { return add([]byte(key), v) })
	}
	if err != nil {
		return statusOf("Scan", err)
	}
	if streamErr != nil {
		if errors.Is(streamErr, io.EOF) {
			return nil // the caller stopped early
		}
		return streamErr
	}
	// The last page, empty when the range is: it carries the height.
	return stream.Send(page)
}

func (s *service) Apply(ctx context.Context, req *api.MemApplyRequest) (*api.MemApplyResponse, error) {
	defer s.applyLat.Since(time.Now())
	b, err := decodeApply(req)
	if err != nil {
		return nil, statusOf("Apply", err)
	}
	var appliedTo uint64
	if f := s.applied.Load(); f != nil {
		defer func() { // after the unlock: reads go on while it runs
			if appliedTo != 0 {
				(*f)(appliedTo)
			}
		}()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkWriter(callerOf(ctx)); err != nil {
		s.refused.Add(1)
		return nil, err
	}
	h, err := s.db.Savepoint()
	if err != nil {
		return nil, statusOf("Apply", err)
	}
	switch {
	case req.GetFrom() == h:
		if err := s.db.Apply(b, req.GetHeight(), req.GetSync()); err != nil {
			return nil, statusOf(fmt.Sprintf("Apply from %d to %d", h, req.GetHeight()), err)
		}
		s.applies.Add(1)
		s.publish(b.Writes, h, req.GetHeight())
		h = req.GetHeight()
		appliedTo = h
	case req.GetHeight() <= h && req.GetFrom() < h:
		// Its first Apply may have been without sync, or its answer lost
		// before the sync ended: a synced re-send is acknowledged only
		// once storage holds it.
		if req.GetSync() {
			if err := s.db.Sync(req.GetHeight()); err != nil {
				return nil, statusOf(fmt.Sprintf("Apply (re-sent) to %d", req.GetHeight()), err)
			}
		}
		s.resent.Add(1)
	default:
		s.refused.Add(1)
		return &api.MemApplyResponse{Applied: false, Height: h, Durable: s.db.Durable()}, nil
	}
	return &api.MemApplyResponse{Applied: true, Height: h, Durable: s.db.Durable()}, nil
}

func (s *service) Savepoint(context.Context, *api.MemSavepointRequest) (*api.MemSavepointResponse, error) {
	h, err := s.db.Savepoint()
	if err != nil {
		return nil, statusOf("Savepoint", err)
	}
	return &api.MemSavepointResponse{Height: h, Durable: s.db.Durable()}, nil
}

// checkWriter lets caller Apply if it is the writer, claiming the role
// for it when none is configured and nobody applied yet. Called with mu.
func (s *service) checkWriter(caller string) error {
	if s.claimed == nil {
		if s.writer != "" {
			s.claimed = &s.writer
		} else {
			s.claimed = &caller
		}
	}
	if caller != *s.claimed {
		how := "the first peer to write since this memory node started"
		if s.writer != "" {
			how = "the memory node's configured writer"
		}
		return status.Errorf(codes.PermissionDenied,
			"memnode: Apply from %q refused: %q writes to this memory node (%s); one memory node serves one peer's committer, so give each peer a memory node of its own", caller, *s.claimed, how)
	}
	return nil
}

// callerOf returns the common name of the client certificate ctx's call
// came with; "" when the call came without one (in-process tests).
func callerOf(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ""
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.PeerCertificates) == 0 {
		return ""
	}
	return ti.State.PeerCertificates[0].Subject.CommonName
}
