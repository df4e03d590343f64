package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/internal/latency"
)

// A round's peer phases are the difference of two scrapes, bucket by
// bucket, each block counted at its bucket's geometric middle.
func TestStagePhasesFromScrapes(t *testing.T) {
	scrape := func(text string) stageBuckets {
		t.Helper()
		b, err := parseStages(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := scrape(`# HELP strand_committer_stage_seconds ...
strand_committer_stage_seconds_bucket{stage="verify",le="0.0001"} 1
strand_committer_stage_seconds_bucket{stage="verify",le="0.0002"} 1
strand_committer_stage_seconds_bucket{stage="verify",le="+Inf"} 1
strand_committer_stage_seconds_sum{stage="verify"} 0.00005
strand_committer_height 7
`)
	after := scrape(`strand_committer_stage_seconds_bucket{stage="verify",le="0.0001"} 1
strand_committer_stage_seconds_bucket{stage="verify",le="0.0002"} 4
strand_committer_stage_seconds_bucket{stage="verify",le="13.1072"} 4
strand_committer_stage_seconds_bucket{stage="verify",le="+Inf"} 5
strand_committer_stage_seconds_bucket{stage="commit",le="0.0001"} 2
strand_committer_stage_seconds_bucket{stage="commit",le="+Inf"} 2
`)
	got := map[string]map[time.Duration]int{}
	stagePhases(before, after, func(phase string, d time.Duration, n int) {
		if got[phase] == nil {
			got[phase] = map[time.Duration]int{}
		}
		got[phase][d] += n
	})
	// verify: 3 new blocks in (100 µs, 200 µs], one above every bound;
	// commit (reported as persist): 2 blocks at or below 100 µs.
	mid := time.Duration(141421) // sqrt(100e-6 * 200e-6) s, in ns
	if n := got["verify"][mid]; n != 3 {
		t.Errorf("verify: %v, want 3 blocks at about 141 µs", got["verify"])
	}
	if n := got["verify"][latency.Bounds[len(latency.Bounds)-1]]; n != 1 {
		t.Errorf("verify: %v, want 1 block beyond the last bound", got["verify"])
	}
	if n := got["persist"][50*time.Microsecond]; n != 2 || got["commit"] != nil {
		t.Errorf("phases %v, want commit reported as persist: 2 blocks at 50 µs", got)
	}
	// A peer of several channels: a series per channel, summed.
	two := scrape(`strand_committer_stage_seconds_bucket{channel="demo",stage="verify",le="0.0001"} 2
strand_committer_stage_seconds_bucket{channel="demo2",stage="verify",le="0.0001"} 3
`)
	if n := two["verify"][0.0001]; n != 5 {
		t.Errorf("two channels' verify buckets at 100 µs: %d, want 2+3", n)
	}
	if _, err := parseStages(strings.NewReader(`strand_committer_stage_seconds_bucket{stage="verify",le="x"} 1`)); err == nil {
		t.Error("a bucket with a bad le parsed")
	}
}
