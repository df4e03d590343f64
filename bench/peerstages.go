package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/strand-ledger/strand/internal/latency"
)

// stageMetric is the peers' per-block pipeline stage histogram
// (node's committer collector).
const stageMetric = "strand_committer_stage_seconds_bucket"

// stageBuckets is one scrape of stageMetric: stage → upper bound in
// seconds → cumulative count.
type stageBuckets map[string]map[float64]uint64

// scrapeStages reads stageMetric from a node's Prometheus endpoint. A
// peer of several channels has a series per channel (label channel):
// their counts are summed, so a round's peer phases are then every
// channel's blocks on that peer.
func scrapeStages(addr string) (stageBuckets, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("bench: reading the peer's metrics at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bench: reading the peer's metrics at %s: HTTP %s", addr, resp.Status)
	}
	return parseStages(resp.Body)
}

// parseStages picks the stageMetric lines out of Prometheus's text format,
// such as strand_committer_stage_seconds_bucket{stage="verify",le="0.001"} 12.
func parseStages(r io.Reader) (stageBuckets, error) {
	out := stageBuckets{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), stageMetric+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(line, "} ")
		if !ok {
			return nil, fmt.Errorf("bench: metrics line %q: want labels in braces, then the value", sc.Text())
		}
		var stage, le string
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "stage":
				stage = v
			case "le":
				le = v
			}
		}
		bound, err1 := strconv.ParseFloat(le, 64)
		n, err2 := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if stage == "" || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bench: metrics line %q: want a stage, a numeric le and a count", sc.Text())
		}
		if out[stage] == nil {
			out[stage] = map[float64]uint64{}
		}
		out[stage][bound] += uint64(n) // a peer of several channels: one series per channel, summed
	}
	return out, sc.Err()
}

// stagePhases turns the blocks a round added to a peer's stage histograms
// (after minus before) into phase samples: each block counts at its
// bucket's geometric middle, so the figures have the buckets' resolution
// (latency.Bounds, about 2.5× apart); the mean is as exact as the buckets.
// Stage "commit" is reported as phase "persist", like an embedded peer's.
func stagePhases(before, after stageBuckets, record func(phase string, d time.Duration, n int)) {
	for stage, cum := range after {
		phase := stage
		if stage == "commit" {
			phase = "persist"
		}
		var prevCum, a, z uint64 // a, z: the last cumulative counts seen after and before
		lower := 0.0
		for _, b := range latency.Bounds {
			upper := b.Seconds()
			if v, ok := cum[upper]; ok { // a bucket missing from a scrape holds nothing
				a = v
			}
			if v, ok := before[stage][upper]; ok {
				z = v
			}
			c := a - z
			if n := c - prevCum; n > 0 && n <= c {
				mid := upper / 2
				if lower > 0 {
					mid = math.Sqrt(lower * upper)
				}
				record(phase, time.Duration(mid*float64(time.Second)), int(n))
			}
			prevCum, lower = c, upper
		}
		inf := cum[math.Inf(1)] - before[stage][math.Inf(1)]
		if n := inf - prevCum; n > 0 && n <= inf {
			record(phase, latency.Bounds[len(latency.Bounds)-1], int(n))
		}
	}
}
