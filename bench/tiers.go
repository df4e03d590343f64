package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strand-ledger/strand/localnet"
)

// TierResult is what the state tiers of a round with memory nodes
// answered over the load, summed over every peer, its compute nodes and
// its memory node: the reads each tier served and the latency of the
// remote reads (a compute node's count as its peer's).
// The counts are read from the nodes' metrics endpoints before and after
// the load (the setup's reads are left out).
type TierResult struct {
	// MemoryMB and CacheMB are the round's memory tier limit and local
	// cache per peer, defaults filled in (CacheMB -1: none).
	MemoryMB int `json:"memory_mb"`
	CacheMB  int `json:"cache_mb"`
	// CacheHits are reads the peers' local caches answered; MemoryHits,
	// reads the memory tiers answered; StorageReads, reads that fell
	// through to the storage tiers (Pebble), keys found or not.
	CacheHits    uint64 `json:"cache_hits"`
	MemoryHits   uint64 `json:"memory_hits"`
	StorageReads uint64 `json:"storage_reads"`
	// The three as percentages of all reads (0 when there were none).
	CachePct   float64 `json:"cache_pct"`
	MemoryPct  float64 `json:"memory_pct"`
	StoragePct float64 `json:"storage_pct"`
	// RemoteCalls are the peers' read calls to their memory nodes
	// (one per batch of keys the local cache missed); RemoteP50Ms and
	// RemoteP99Ms their latency as the peer measured it, at the
	// buckets' resolution (powers of two from 100 µs), interpolated
	// within a bucket.
	RemoteCalls uint64  `json:"remote_calls"`
	RemoteP50Ms float64 `json:"remote_p50_ms"`
	RemoteP99Ms float64 `json:"remote_p99_ms"`
	// The messages the peers (and their compute nodes) sent their memory
	// nodes, by kind: multi-gets of values (endorsements' reads),
	// multi-gets of versions only (the committers' MVCC checks) and
	// applied batches; VersionReads, the keys of the version multi-gets;
	// StalePuts, keys read remotely that a cache did not keep because a
	// batch was applied while the read was out (one that wrote them, or
	// the read answered above the cache's height).
	ValueCalls   uint64 `json:"value_calls"`
	VersionCalls uint64 `json:"version_calls"`
	VersionReads uint64 `json:"version_reads"`
	Applies      uint64 `json:"applies"`
	StalePuts    uint64 `json:"stale_puts"`
	// Evicted are versions the memory tiers dropped (after storage held
	// them); MemoryHeldMB, the bytes they held at the end.
	Evicted      uint64  `json:"evicted"`
	MemoryHeldMB float64 `json:"memory_held_mb"`
	// Endorsed is how many proposals each member of the peers'
	// endorsement pools answered over the load, by name: the compute
	// nodes, and a primary that endorsed (none with compute nodes in
	// its pool, unless all of them failed).
	Endorsed map[string]uint64 `json:"endorsed,omitempty"`
}

// The series read (node.NewStructCollector's names of
// memnode.ClientMetrics and memnode.Metrics).
const (
	seriesCacheHits    = "strand_memnode_client_cache_hits_total"
	seriesReadLatency  = "strand_memnode_client_read_latency_seconds_bucket"
	seriesMemoryHits   = `strand_memnode_tiers_reads_total{tier="memory"}`
	seriesStorageReads = `strand_memnode_tiers_reads_total{tier="storage"}`
	seriesEvicted      = "strand_memnode_tiers_evicted_total"
	seriesValueCalls   = "strand_memnode_client_value_calls_total"
	seriesVersionCalls = "strand_memnode_client_version_calls_total"
	seriesVersionReads = "strand_memnode_client_version_reads_total"
	seriesApplies      = "strand_memnode_client_applies_total"
	seriesStalePuts    = "strand_memnode_client_stale_puts_total"
	seriesMemoryBytes  = "strand_memnode_tiers_memory_bytes"
	seriesPoolServed   = `strand_pool_served_total{member="`
)

// scrape is one node's metrics: a series (name and labels as written,
// such as x_bucket{le="0.001"}) to its value.
type scrape map[string]float64

// readMetrics reads a node's metrics endpoint.
func readMetrics(addr string) (scrape, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("bench: reading the metrics at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bench: reading the metrics at %s: HTTP %s", addr, resp.Status)
	}
	return parseScrape(resp.Body)
}

// parseScrape reads Prometheus's text format; comments are skipped.
func parseScrape(r io.Reader) (scrape, error) {
	out := scrape{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("bench: metrics line %q: want a series, a space and a value", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("bench: metrics line %q: the value is not a number", line)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// buckets returns histogram name's cumulative buckets: upper bound in
// seconds → count, +Inf included.
func (s scrape) buckets(name string) map[float64]float64 {
	out := map[float64]float64{}
	for k, v := range s {
		rest, ok := strings.CutPrefix(k, name+"{")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
			if le, ok := strings.CutPrefix(kv, `le="`); ok {
				if b, err := strconv.ParseFloat(strings.TrimSuffix(le, `"`), 64); err == nil {
					out[b] = v
				}
			}
		}
	}
	return out
}

// quantile is the q-quantile of the observations between two scrapes of
// a cumulative histogram, in seconds: linear within the bucket it falls
// in (from 0 for the first); the largest finite bound if it falls above
// it; 0 with no observations.
func quantile(before, after map[float64]float64, q float64) float64 {
	bounds := make([]float64, 0, len(after))
	for b := range after {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total <= 0 || len(bounds) == 0 {
		return 0
	}
	rank := q * total
	lower, prev := 0.0, 0.0
	for _, b := range bounds {
		c := after[b] - before[b]
		if c >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			if c == prev {
				return b
			}
			return lower + (b-lower)*(rank-prev)/(c-prev)
		}
		lower, prev = b, c
	}
	return lower
}

// tierWatch scrapes a network's peers and memory nodes at the load's
// start and end.
type tierWatch struct {
	d      Disagg
	addrs  []string // peers', memory nodes' and compute nodes' metrics endpoints
	before []scrape
}

// watchTiers scrapes every peer that has a memory node, the memory node
// and the peer's compute nodes, now; nil when the round has no memory
// nodes.
func watchTiers(d Disagg, l *localnet.Layout) (*tierWatch, error) {
	if !d.Memnodes {
		return nil, nil
	}
	w := &tierWatch{d: d}
	for _, m := range l.Memnodes {
		w.addrs = append(w.addrs, m.Metrics)
		for _, n := range l.Nodes {
			if n.Name == m.Serves {
				w.addrs = append(w.addrs, n.Metrics)
			}
		}
		// A compute node reads the same memory node through a cache of
		// its own (the same memnode_client series as a peer's).
		for _, c := range l.ComputesOf(m.Serves) {
			w.addrs = append(w.addrs, c.Metrics)
		}
	}
	if len(w.addrs) == 0 {
		return nil, fmt.Errorf("bench: the network has no memory nodes with metrics endpoints")
	}
	var err error
	w.before, err = w.scrapeAll()
	return w, err
}

func (w *tierWatch) scrapeAll() ([]scrape, error) {
	out := make([]scrape, len(w.addrs))
	for i, a := range w.addrs {
		if a == "" {
			return nil, fmt.Errorf("bench: a peer or memory node of the network has no metrics endpoint")
		}
		var err error
		if out[i], err = readMetrics(a); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// finish scrapes again and returns the difference.
func (w *tierWatch) finish() (*TierResult, error) {
	after, err := w.scrapeAll()
	if err != nil {
		return nil, err
	}
	return tierDelta(w.d, w.before, after), nil
}

// tierDelta sums what the nodes counted between two scrapes of each.
func tierDelta(d Disagg, before, after []scrape) *TierResult {
	t := &TierResult{MemoryMB: d.MemoryMB, CacheMB: d.CacheMB}
	if t.MemoryMB == 0 {
		t.MemoryMB = 256
	}
	if t.CacheMB == 0 {
		t.CacheMB = 64
	}
	diff := func(i int, name string) uint64 { return uint64(max(after[i][name]-before[i][name], 0)) }
	lat, latBefore := map[float64]float64{}, map[float64]float64{}
	for i := range after {
		t.CacheHits += diff(i, seriesCacheHits)
		t.MemoryHits += diff(i, seriesMemoryHits)
		t.StorageReads += diff(i, seriesStorageReads)
		t.Evicted += diff(i, seriesEvicted)
		t.ValueCalls += diff(i, seriesValueCalls)
		t.VersionCalls += diff(i, seriesVersionCalls)
		t.VersionReads += diff(i, seriesVersionReads)
		t.Applies += diff(i, seriesApplies)
		t.StalePuts += diff(i, seriesStalePuts)
		t.MemoryHeldMB += after[i][seriesMemoryBytes] / (1 << 20)
		for b, v := range after[i].buckets(seriesReadLatency) {
			lat[b] += v
		}
		for b, v := range before[i].buckets(seriesReadLatency) {
			latBefore[b] += v
		}
		for k, v := range after[i] {
			if member, ok := strings.CutPrefix(k, seriesPoolServed); ok {
				if n := uint64(max(v-before[i][k], 0)); n > 0 {
					if t.Endorsed == nil {
						t.Endorsed = map[string]uint64{}
					}
					t.Endorsed[strings.TrimSuffix(member, `"}`)] += n
				}
			}
		}
	}
	if all := float64(t.CacheHits + t.MemoryHits + t.StorageReads); all > 0 {
		t.CachePct = round2(100 * float64(t.CacheHits) / all)
		t.MemoryPct = round2(100 * float64(t.MemoryHits) / all)
		t.StoragePct = round2(100 * float64(t.StorageReads) / all)
	}
	t.RemoteCalls = uint64(max(lat[math.Inf(1)]-latBefore[math.Inf(1)], 0))
	t.RemoteP50Ms = round3(1e3 * quantile(latBefore, lat, 0.5))
	t.RemoteP99Ms = round3(1e3 * quantile(latBefore, lat, 0.99))
	t.MemoryHeldMB = round2(t.MemoryHeldMB)
	return t
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
