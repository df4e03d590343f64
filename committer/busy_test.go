package committer

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestBusyClockCountsOverlapOnce(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name string
		ivs  [][2]int // start, end in ms
		want time.Duration
	}{
		{"disjoint", [][2]int{{0, 10}, {20, 25}}, 15 * time.Millisecond},
		{"overlapping", [][2]int{{0, 10}, {5, 15}}, 15 * time.Millisecond},
		{"touching", [][2]int{{0, 10}, {10, 12}}, 12 * time.Millisecond},
		{"inside the last", [][2]int{{0, 10}, {2, 8}}, 10 * time.Millisecond},
		{"empty", [][2]int{{5, 5}}, 0},
		{"backwards", [][2]int{{5, 3}}, 0},
		// Ends out of order: the late one's part before the last end is
		// dropped, so the sum may fall short of the union, never exceed it.
		{"out of order", [][2]int{{10, 20}, {0, 5}}, 10 * time.Millisecond},
	} {
		var b busyClock
		for _, iv := range tc.ivs {
			b.add(at(iv[0]), at(iv[1]))
		}
		if got := b.read(); got != tc.want {
			t.Errorf("%s: busy %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBusyIntervals: every block is reported once by receive, verify
// and validate, every group by persist; each block's intervals follow
// its path through the pipeline; Metrics sums them.
func TestBusyIntervals(t *testing.T) {
	n := newTestNet(t)
	var mu sync.Mutex
	got := map[Stage][][2]time.Time{}
	p := openPeer(t, n, t.TempDir(), Options{OnBusy: func(s Stage, start, end time.Time) {
		mu.Lock()
		got[s] = append(got[s], [2]time.Time{start, end})
		mu.Unlock()
	}})
	mu.Lock()
	before := map[Stage]int{}
	for s := range numStages {
		before[s] = len(got[s])
	}
	mu.Unlock()
	const blocks = 4
	for i := range blocks {
		deliver(t, p, n.block(n.tx(rwset(testContract, nil, wr("k", string(rune('a'+i))))), n.tx(rwset(testContract, nil, wr("j", "v")))))
	}
	mu.Lock()
	defer mu.Unlock()
	for s := range numStages {
		if len(got[s])-before[s] != blocks {
			t.Fatalf("%v: %d intervals for %d blocks delivered one at a time, want one each", s, len(got[s])-before[s], blocks)
		}
	}
	m := p.Metrics()
	for s := range numStages {
		var sum time.Duration
		for _, iv := range got[s] {
			if iv[1].Before(iv[0]) {
				t.Errorf("%v interval ends at %v, before its start %v", s, iv[1], iv[0])
			}
			sum += iv[1].Sub(iv[0])
		}
		// Blocks were delivered one at a time, so no two intervals of a
		// stage overlap and the clock is their plain sum.
		if m.Busy[s] != sum || sum <= 0 {
			t.Errorf("%v: Metrics.Busy %v, want the intervals' sum %v (> 0)", s, m.Busy[s], sum)
		}
	}
	var all [][2]time.Time
	for s := range numStages {
		all = append(all, got[s]...)
	}
	if want := unionOf(all); m.PipelineBusy != want || want <= 0 {
		t.Errorf("Metrics.PipelineBusy %v, want the union of every stage's intervals %v (> 0)", m.PipelineBusy, want)
	}
	for i := range got[StageVerify] {
		r, v, a, c := got[StageReceive][i], got[StageVerify][i], got[StageValidate][i], got[StagePersist][i]
		if v[0].Before(r[1]) || a[0].Before(v[1]) || c[0].Before(a[1]) {
			t.Errorf("block %d: receive %v, verify %v, validate %v, persist %v: a stage starts before the one before it ended", i, r, v, a, c)
		}
	}
}

// unionOf is the exact length of the union of intervals, by sorting.
func unionOf(ivs [][2]time.Time) time.Duration {
	ivs = slices.Clone(ivs)
	slices.SortFunc(ivs, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	var total time.Duration
	var cur [2]time.Time
	for i, iv := range ivs {
		switch {
		case i == 0:
			cur = iv
		case iv[0].After(cur[1]):
			total += cur[1].Sub(cur[0])
			cur = iv
		case iv[1].After(cur[1]):
			cur[1] = iv[1]
		}
	}
	if len(ivs) > 0 {
		total += cur[1].Sub(cur[0])
	}
	return total
}
