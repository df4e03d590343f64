package rate

import (
	"fmt"
	"time"
)

// Maximum raises an open-loop rate stepwise to find the knee: the rate
// past which throughput stops growing. It starts at From tps and adds
// Step tps every StepTime. At the end of each step it measures that
// step's throughput (completions during the step over StepTime); while a
// step beats the best so far by more than MinGain (a fraction), it keeps
// raising. Once one does not, the knee is the best step, and the rate
// stays at the knee's rate for the rest of the round.
type Maximum struct {
	From, Step float64
	StepTime   time.Duration
	MinGain    float64

	rate      float64
	stepStart time.Duration // when the current step began
	stepDone  int64         // completions when it began
	due       float64       // transactions due by the start of the step
	steps     []StepResult
	knee      int // index into steps; -1 while searching
	searching bool
}

// StepResult is one step of the search.
type StepResult struct {
	Rate, Throughput float64
}

// EnsureDefaults fills unset fields: 100 tps, +100 per 2 s step, 5% gain.
func (m *Maximum) EnsureDefaults() {
	if m.From == 0 {
		m.From = 100
	}
	if m.Step == 0 {
		m.Step = 100
	}
	if m.StepTime == 0 {
		m.StepTime = 2 * time.Second
	}
	if m.MinGain == 0 {
		m.MinGain = 0.05
	}
}

// Poll sends at the current step's rate and moves between steps.
func (m *Maximum) Poll(t time.Duration, c Counts) Decision {
	if m.rate == 0 {
		m.rate, m.knee, m.searching = m.From, -1, true
	}
	for m.searching && t-m.stepStart >= m.StepTime {
		m.endStep(c.Completed)
	}
	in := t - m.stepStart
	// A step that ends is accounted for in due, so the rate change never
	// re-sends or skips transactions.
	n := int(max(0, m.due+m.rate*in.Seconds()-float64(c.Started)))
	return Decision{Start: n, Wait: min(maxTick, max(time.Duration(float64(time.Second)/m.rate), 50*time.Microsecond))}
}

func (m *Maximum) endStep(completed int64) {
	tput := float64(completed-m.stepDone) / m.StepTime.Seconds()
	m.steps = append(m.steps, StepResult{Rate: m.rate, Throughput: tput})
	m.due += m.rate * m.StepTime.Seconds()
	m.stepStart += m.StepTime
	m.stepDone = completed
	best := -1
	for i := range len(m.steps) - 1 {
		if best < 0 || m.steps[i].Throughput > m.steps[best].Throughput {
			best = i
		}
	}
	if best >= 0 && tput <= m.steps[best].Throughput*(1+m.MinGain) {
		m.searching = false
		m.knee = best
		if tput > m.steps[best].Throughput {
			m.knee = len(m.steps) - 1
		}
		m.rate = m.steps[m.knee].Rate
		return
	}
	m.rate += m.Step
}

// Knee returns the step at the knee, and false while still searching.
func (m *Maximum) Knee() (StepResult, bool) {
	if m.knee < 0 || m.searching {
		return StepResult{}, false
	}
	return m.steps[m.knee], true
}

// Steps returns the steps measured so far.
func (m *Maximum) Steps() []StepResult { return append([]StepResult(nil), m.steps...) }

func (m *Maximum) Describe() string {
	return fmt.Sprintf("maximum-rate from %g tps, +%g per %v, until the gain is below %.0f%%", m.From, m.Step, m.StepTime, 100*m.MinGain)
}
