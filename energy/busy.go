package energy

import (
	"fmt"
	"slices"
	"time"
)

// Interval is a stretch during which a stage of the peer was working:
// verifying, validating or persisting a block.
type Interval struct {
	Stage      string
	Start, End time.Time
}

// Union merges intervals from any number of stages into the sorted,
// disjoint periods during which at least one was working. Overlapping
// and touching intervals merge; empty ones vanish. An interval that ends
// before it starts is an error naming it.
func Union(in []Interval) ([]Interval, error) {
	for i, iv := range in {
		if iv.End.Before(iv.Start) {
			return nil, fmt.Errorf("%w: busy interval %d (%s) ends at %v, before its start at %v", ErrTimeline, i, iv.Stage, iv.End, iv.Start)
		}
	}
	s := slices.Clone(in)
	slices.SortFunc(s, func(a, b Interval) int { return a.Start.Compare(b.Start) })
	var out []Interval
	for _, iv := range s {
		if !iv.End.After(iv.Start) {
			continue
		}
		if n := len(out); n > 0 && !iv.Start.After(out[n-1].End) {
			if iv.End.After(out[n-1].End) {
				out[n-1].End = iv.End
			}
			continue
		}
		out = append(out, Interval{Stage: "busy", Start: iv.Start, End: iv.End})
	}
	return out, nil
}

// Overlay is the study's idle exclusion (§III-B3): it lays the peer's
// busy intervals over a log of cumulative meter readings and returns the
// energy and time of the whole log beside those of its busy periods,
// with txs transactions committed over it.
//
// Between two readings the power is taken as constant, so a step of the
// log that is a fraction f busy contributes f of its energy to the busy
// figure; the finer the log (the study's is 10 ms), the less this
// smears a block's burst into the idle gap beside it. Busy time outside
// the log is not counted and is returned as BusyOutside: a large value
// means the log does not cover the run, or the clocks disagree.
//
// The log must be in time order with energy that never falls, from one
// source with one set of model parameters; anything else is an error.
func Overlay(log []Reading, busy []Interval, txs int64) (Metrics, error) {
	if len(log) < 2 {
		return Metrics{}, fmt.Errorf("%w: energy log of %d readings, want at least 2", ErrTimeline, len(log))
	}
	for i := 1; i < len(log); i++ {
		if err := next(log[0], log[i-1], log[i], i); err != nil {
			return Metrics{}, err
		}
	}
	periods, err := Union(busy)
	if err != nil {
		return Metrics{}, err
	}
	first, last := log[0], log[len(log)-1]
	m := Metrics{
		Source: first.Source,
		Model:  first.Model,
		Txs:    txs,
		Whole:  Span{Duration: last.At.Sub(first.At), Joules: last.Joules - first.Joules},
	}
	var inside time.Duration
	j := 0 // periods before j end before the current step
	for i := 1; i < len(log); i++ {
		a, b := log[i-1].At, log[i].At
		for j < len(periods) && !periods[j].End.After(a) {
			j++
		}
		var over time.Duration
		for k := j; k < len(periods) && periods[k].Start.Before(b); k++ {
			lo, hi := later(a, periods[k].Start), earlier(b, periods[k].End)
			if hi.After(lo) {
				over += hi.Sub(lo)
			}
		}
		if over > 0 {
			inside += over
			m.Busy.Joules += (log[i].Joules - log[i-1].Joules) * over.Seconds() / b.Sub(a).Seconds()
		}
	}
	m.Busy.Duration = inside
	var all time.Duration
	for _, p := range periods {
		all += p.End.Sub(p.Start)
	}
	m.BusyOutside = all - inside
	return m, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
