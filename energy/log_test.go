package energy

import (
	"errors"
	"testing"
)

// TestLogAddRefusesMixing: a run's log never takes a second source, so
// no figure made from it can mix two.
func TestLogAddRefusesMixing(t *testing.T) {
	var l Log
	p := ModelParams{ActiveWatts: 8.5, IdleWatts: 1.44, Cores: 2}
	if err := l.Add(Reading{At: ms(0), Source: SourceRAPL}); err != nil {
		t.Fatal(err)
	}
	if err := l.Add(Reading{At: ms(10), Source: SourceModel, Joules: 1, Model: &p}); !errors.Is(err, ErrMixedSources) {
		t.Errorf("model after RAPL: %v, want ErrMixedSources", err)
	}
	if err := l.Add(Reading{At: ms(10), Source: SourceRAPL, Joules: 1}); err != nil {
		t.Errorf("a good second reading: %v", err)
	}
	if n := len(l.Readings()); n != 2 {
		t.Errorf("%d readings, want 2 (the refused one left out)", n)
	}
}
