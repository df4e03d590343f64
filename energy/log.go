package energy

import "fmt"

// Log is a run's energy log: one meter's readings in time order. Add
// refuses a reading that would break Overlay's rules, so a log that was
// built without error is one source, forward in time and never falling.
type Log struct {
	readings []Reading
}

// Add appends r.
func (l *Log) Add(r Reading) error {
	if n := len(l.readings); n > 0 {
		if err := next(l.readings[0], l.readings[n-1], r, n); err != nil {
			return err
		}
	}
	l.readings = append(l.readings, r)
	return nil
}

// Readings returns the log; the caller must not change it.
func (l *Log) Readings() []Reading { return l.readings }

// Overlay is Overlay over the log.
func (l *Log) Overlay(busy []Interval, txs int64) (Metrics, error) {
	return Overlay(l.readings, busy, txs)
}

// next checks that reading i may follow prev in a log that began with
// first.
func next(first, prev, r Reading, i int) error {
	if err := sameSource(first, r); err != nil {
		return fmt.Errorf("energy log reading %d: %w", i, err)
	}
	if !r.At.After(prev.At) {
		return fmt.Errorf("%w: energy log reading %d at %v is not after reading %d at %v", ErrTimeline, i, r.At, i-1, prev.At)
	}
	if r.Joules < prev.Joules {
		return fmt.Errorf("%w: energy log reading %d is %v J, below reading %d's %v J (a meter never runs back)", ErrTimeline, i, r.Joules, i-1, prev.Joules)
	}
	return nil
}
