package bench

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// A peer's and its memory node's metrics as node.NewStructCollector
// writes them (the series the tiers read, and others around them).
const peerBefore = `# HELP strand_memnode_client_cache_hits_total Reads the local cache answered.
# TYPE strand_memnode_client_cache_hits_total counter
strand_memnode_client_cache_hits_total 100
strand_memnode_client_read_latency_seconds_bucket{le="0.0001"} 0
strand_memnode_client_read_latency_seconds_bucket{le="0.0002"} 10
strand_memnode_client_read_latency_seconds_bucket{le="0.0004"} 10
strand_memnode_client_read_latency_seconds_bucket{le="+Inf"} 10
strand_memnode_client_read_latency_seconds_sum 0.0015
strand_memnode_client_read_latency_seconds_count 10
strand_memnode_client_value_calls_total 8
strand_memnode_client_version_calls_total 2
strand_memnode_client_version_reads_total 3
strand_memnode_client_applies_total 4
strand_memnode_client_stale_puts_total 1
strand_committer_stage_seconds_bucket{stage="verify",le="0.001"} 12
strand_pool_served_total{member="compute0.peer0.Org1"} 3
strand_pool_served_total{member="peer0.Org1"} 7
`

const peerAfter = `strand_memnode_client_cache_hits_total 700
strand_memnode_client_value_calls_total 88
strand_memnode_client_version_calls_total 22
strand_memnode_client_version_reads_total 33
strand_memnode_client_applies_total 54
strand_memnode_client_stale_puts_total 6
strand_memnode_client_read_latency_seconds_bucket{le="0.0001"} 0
strand_memnode_client_read_latency_seconds_bucket{le="0.0002"} 60
strand_memnode_client_read_latency_seconds_bucket{le="0.0004"} 108
strand_memnode_client_read_latency_seconds_bucket{le="+Inf"} 110
strand_pool_served_total{member="compute0.peer0.Org1"} 53
strand_pool_served_total{member="compute1.peer0.Org1"} 40
strand_pool_served_total{member="peer0.Org1"} 7
`

const memBefore = `strand_memnode_tiers_reads_total{tier="memory"} 5
strand_memnode_tiers_reads_total{tier="storage"} 1
strand_memnode_tiers_evicted_total 0
strand_memnode_tiers_memory_bytes 1048576
`

const memAfter = `strand_memnode_tiers_reads_total{tier="memory"} 305
strand_memnode_tiers_reads_total{tier="storage"} 101
strand_memnode_tiers_evicted_total 40
strand_memnode_tiers_memory_bytes 3145728
`

func mustScrape(t *testing.T, s string) scrape {
	t.Helper()
	sc, err := parseScrape(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestTierDelta: the tiers' counts are what the load added (after minus
// before, summed over the nodes), the percentages are of all reads, and
// the remote latency quantiles fall in the right buckets; the messages
// to the memory node are counted by kind; the pool
// members that answered proposals over the load are listed with how many
// (a compute node that joined during it too, the idle primary not).
func TestTierDelta(t *testing.T) {
	before := []scrape{mustScrape(t, memBefore), mustScrape(t, peerBefore)}
	after := []scrape{mustScrape(t, memAfter), mustScrape(t, peerAfter)}
	got := tierDelta(Disagg{Memnodes: true, MemoryMB: 32}, before, after)
	want := TierResult{MemoryMB: 32, CacheMB: 64, CacheHits: 600, MemoryHits: 300, StorageReads: 100,
		CachePct: 60, MemoryPct: 30, StoragePct: 10, RemoteCalls: 100, Evicted: 40, MemoryHeldMB: 3,
		ValueCalls: 80, VersionCalls: 20, VersionReads: 30, Applies: 50, StalePuts: 5,
		Endorsed: map[string]uint64{"compute0.peer0.Org1": 50, "compute1.peer0.Org1": 40}}
	p50, p99 := got.RemoteP50Ms, got.RemoteP99Ms
	got.RemoteP50Ms, got.RemoteP99Ms = 0, 0
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("tierDelta = %+v, want %+v", *got, want)
	}
	// 50 of the 100 calls fell in (0.1, 0.2] ms, 48 in (0.2, 0.4], 2 above.
	if !(p50 > 0.1 && p50 <= 0.2) || !(p99 == 0.4) {
		t.Errorf("remote p50 %v ms, p99 %v ms: want p50 in (0.1, 0.2] and p99 at the largest bound, 0.4", p50, p99)
	}
}

// TestQuantile: interpolation within a bucket, the first bucket from 0,
// and no observations.
func TestQuantile(t *testing.T) {
	after := map[float64]float64{1: 10, 2: 30, math.Inf(1): 30}
	none := map[float64]float64{}
	for _, tc := range []struct{ q, want float64 }{{0.5, 1.25}, {0.2, 0.6}, {1, 2}} {
		if got := quantile(none, after, tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := quantile(after, after, 0.5); got != 0 {
		t.Errorf("quantile with no new observations = %v, want 0", got)
	}
}

// TestParseScrapeBad: a line without a numeric value is an error that
// quotes it.
func TestParseScrapeBad(t *testing.T) {
	if _, err := parseScrape(strings.NewReader("strand_x{a=\"b\"} many\n")); err == nil || !strings.Contains(err.Error(), "many") || !strings.Contains(err.Error(), "not a number") {
		t.Errorf("parseScrape of a bad line: %v", err)
	}
}
