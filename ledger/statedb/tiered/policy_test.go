package tiered

import (
	"slices"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	p := flushPolicy{blocks: 4, interval: time.Second}
	t0 := time.Unix(1000, 0)
	base := tierState{height: 10, durable: 8, synced: 8, bytes: 500, bound: 1000, lastFlush: t0}
	for _, tc := range []struct {
		name string
		edit func(s *tierState)
		now  time.Time
		want plan
	}{
		{"idle: 2 blocks behind, under the marks, before the interval", nil, t0, plan{evictTo: -1}},
		{"FlushBlocks behind", func(s *tierState) { s.height = 12 }, t0, plan{flush: true, evictTo: -1}},
		{"interval passed", nil, t0.Add(time.Second), plan{flush: true, evictTo: -1}},
		{"interval passed, nothing behind", func(s *tierState) { s.durable = 10 }, t0.Add(time.Hour), plan{evictTo: -1}},
		{"closing", func(s *tierState) { s.closing = true }, t0, plan{flush: true, sync: true, evictTo: -1}},
		{"closing, nothing behind", func(s *tierState) { s.closing, s.durable = true, 10 }, t0, plan{evictTo: -1}},
		{"sync wanted", func(s *tierState) { s.syncTo = 10 }, t0, plan{flush: true, sync: true, evictTo: -1}},
		{"sync of a flushed, unsynced height", func(s *tierState) { s.durable, s.syncTo = 10, 10 }, t0, plan{flush: true, sync: true, evictTo: -1}},
		{"above high water: flush, evict to low", func(s *tierState) { s.bytes = 901 }, t0, plan{flush: true, evictTo: 750}},
		{"at high water: nothing", func(s *tierState) { s.bytes = 900 }, t0, plan{evictTo: -1}},
		{"waiter for 100 bytes: low water", func(s *tierState) { s.bytes, s.waiting = 950, 100 }, t0, plan{flush: true, evictTo: 750}},
		{"waiter for 400 bytes: its room", func(s *tierState) { s.bytes, s.waiting = 950, 400 }, t0, plan{flush: true, evictTo: 600}},
		{"waiter larger than the tier: empty it", func(s *tierState) { s.bytes, s.waiting = 950, 5000 }, t0, plan{flush: true, evictTo: 0}},
		{"waiter, already below the target", func(s *tierState) { s.bytes, s.waiting = 500, 100 }, t0, plan{flush: true, evictTo: -1}},
	} {
		s := base
		if tc.edit != nil {
			tc.edit(&s)
		}
		if got := p.decide(s, tc.now); got != tc.want {
			t.Errorf("%s: decide = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestDeadline(t *testing.T) {
	p := flushPolicy{interval: time.Second}
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		now, want time.Time
	}{
		{t0, t0.Add(time.Second)}, // within the interval: its end
		{t0.Add(999 * time.Millisecond), t0.Add(time.Second)},
		{t0.Add(time.Second), t0.Add(2 * time.Second)}, // passed: an interval from now, not now
		{t0.Add(time.Hour), t0.Add(time.Hour + time.Second)},
	} {
		if got := p.deadline(t0, tc.now); !got.Equal(tc.want) {
			t.Errorf("deadline(last flush t0, now t0+%v) = t0+%v, want t0+%v", tc.now.Sub(t0), got.Sub(t0), tc.want.Sub(t0))
		}
	}
}

func TestVictims(t *testing.T) {
	cands := func() []candidate {
		return []candidate{{"a", 10, 5}, {"b", 30, 1}, {"c", 20, 1}, {"d", 40, 9}, {"e", 20, 1}}
	}
	for _, tc := range []struct {
		used, target int64
		want         []string
	}{
		{120, 120, nil},
		{120, 100, []string{"b"}},                   // coldest first; among equals the larger
		{120, 70, []string{"b", "c"}},               // equal age and size: by key
		{120, 69, []string{"b", "c", "e"}},          // 70 is not enough
		{120, 49, []string{"b", "c", "e", "a"}},     // then the next coldest
		{120, 0, []string{"b", "c", "e", "a", "d"}}, // everything
		{500, 0, []string{"b", "c", "e", "a", "d"}}, // not enough: everything
		{120, 91, []string{"b"}},                    // 90 <= 91 after one
	} {
		got := victims(cands(), tc.used, tc.target)
		if !slices.Equal(got, tc.want) {
			t.Errorf("victims(used %d, target %d) = %v, want %v", tc.used, tc.target, got, tc.want)
		}
	}
}
