package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/bench"
)

// TestValidatorRateMedians: one chain at full speed, then three times
// at 100%, 50% and 25% interleaved (r3 of docs/energy.md): the medians
// per rate, and how far apart the paced rates' busy medians are, and
// their validation medians (the study's busy time), max left out; a run without repeated rates prints none of it.
func TestValidatorRateMedians(t *testing.T) {
	run := func(rate string, cpuUs, whole, busy float64) *bench.ValidatorResult {
		return &bench.ValidatorResult{Mode: "sequential", BlockSize: 100, Rate: rate, CPUSecondsPerTx: cpuUs / 1e6,
			Energy: &bench.ValidatorEnergy{TxPerSecPerJ: whole, BusyTxPerSecPerJ: busy, ValidationTxPerSecPerJ: busy + 10,
				// as if 99% of the CPU were in busy periods, idle cores 1% of the busy joules
				BusySplit: &bench.BusySplit{CPUPerTxS: 0.99 * cpuUs / 1e6, IdleCoreShare: 0.01}}}
	}
	const r100, r50, r25 = "100% of max (6679 tx/s)", "50% of max (3339 tx/s)", "25% of max (1670 tx/s)"
	rs := []*bench.ValidatorResult{run("max", 292.5, 400, 401),
		run(r100, 286.6, 406, 407), run(r50, 287.8, 346, 404), run(r25, 274.9, 274, 424),
		run(r100, 270.8, 427, 430), run(r50, 302.0, 334, 387), run(r25, 293.5, 264, 394),
		run(r100, 273.5, 423, 428), run(r50, 292.4, 342, 399), run(r25, 285.7, 268, 405)}
	var b bytes.Buffer
	WriteValidatorRateMedians(&b, rs)
	out := b.String()
	for _, want := range []string{
		"Medians by rate",
		"max        1      292.5     400          401     401-401           289.6                     1.0",
		"100% of max (6679 tx/s)        3      273.5     423          428     407-430",
		"50% of max (3339 tx/s)        3      292.4     342          399",
		"25% of max (1670 tx/s)        3      285.7     268          405",
		"block size 100, sequential, workers all, reparse false: busy tx/s/J medians of the paced rates 428, 399, 405: the largest 7.3% above the smallest (whole interval: 423, 342, 268)",
		"block size 100, sequential, workers all, reparse false: validation tx/s/J medians of the paced rates 438, 409, 415: the largest 7.1% above the smallest",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("medians lack %q:\n%s", want, out)
		}
	}
	b.Reset()
	for _, r := range rs {
		r.Energy.BusySplit = nil // RAPL: no split
	}
	WriteValidatorRateMedians(&b, rs)
	if !strings.Contains(b.String(), "405     394-424               -                       -") {
		t.Errorf("figures without a split print it:\n%s", b.String())
	}
	b.Reset()
	WriteValidatorRateMedians(&b, rs[:4])
	if b.Len() != 0 {
		t.Errorf("one replay per rate printed medians:\n%s", b.String())
	}
}
