package bench

import (
	"testing"
	"time"

	"github.com/strand-ledger/strand/energy"
	"github.com/strand-ledger/strand/internal/proccpu"
)

// BenchmarkEnergySampler measures what the replay's energy log costs a
// process that does nothing else: per reading, the process's whole CPU
// time (the runtime's timer wake-up of the sampling goroutine and the
// model's reading of this process's CPU time), beside the part the
// recorder counts itself (the reading alone, on its thread).
func BenchmarkEnergySampler(b *testing.B) {
	for _, every := range []time.Duration{time.Millisecond, DefaultEnergyEvery} {
		b.Run(every.String(), func(b *testing.B) {
			r := newEnergyRecorder(&EnergySpec{Every: every}, 0)
			cpu0, err := proccpu.Self()
			if err != nil {
				b.Fatal(err)
			}
			if err := r.start(energy.Config{Source: energy.SourceModel}); err != nil {
				b.Fatal(err)
			}
			time.Sleep(time.Duration(b.N) * every)
			re, err := r.finish()
			if err != nil {
				b.Fatal(err)
			}
			cpu1, err := proccpu.Self()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/1e3/float64(re.Readings), "process-cpu-µs/reading")
			b.ReportMetric(re.MeterCPUS*1e6/float64(re.Readings), "counted-cpu-µs/reading")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// TestEnergyRecorder: a recorder over this process logs readings, keeps
// only the busy intervals reported while it runs, prices the study's
// busy time (verify and validate, the persist left out) beside the
// union of all three, and counts the readings' CPU.
func TestEnergyRecorder(t *testing.T) {
	r := newEnergyRecorder(&EnergySpec{Every: time.Millisecond}, 4)
	before := time.Now()
	r.onBusy(0, before, before.Add(time.Millisecond)) // before start: ignored
	if err := r.start(energy.Config{Source: energy.SourceModel}); err != nil {
		t.Fatal(err)
	}
	a := time.Now()
	spin := a.Add(20 * time.Millisecond)
	for time.Now().Before(spin) {
	}
	mid := a.Add(10 * time.Millisecond)
	r.onBusy(0, a, mid)                                               // verify, then validate overlapping it
	r.onBusy(1, a.Add(5*time.Millisecond), mid.Add(time.Millisecond)) // validate: an edge reading
	r.onBusy(2, mid, time.Now())                                      // persist: also an edge reading
	time.Sleep(5 * time.Millisecond)
	re, err := r.finish()
	if err != nil {
		t.Fatal(err)
	}
	if re.Source != energy.SourceModel || re.Model == nil || re.Readings < 4 {
		t.Fatalf("%+v: want a model log of at least the start, the two edges and the end", re)
	}
	if !(re.BusyS > 0 && re.BusyS < re.WholeS && re.BusyJ > 0 && re.BusyJ < re.WholeJ) || re.BusyOutsideS != 0 {
		t.Errorf("%+v: want one busy period inside the log, less than the whole", re)
	}
	near := func(got, want float64) bool { return got > want-1e-6 && got < want+1e-6 }
	if st := re.StageBusyS; !near(st["verify"], 0.010) || !near(st["validate"], 0.006) || !(st["persist"] >= 0.010) || !near(re.BusyS, 0.010+st["persist"]) {
		t.Errorf("stage busy %v, busy %v s: want verify 10 ms, validate 6 ms, persist ≥ 10 ms and busy their union", st, re.BusyS)
	}
	if !near(re.ValidationS, 0.011) || !(re.ValidationJ > 0 && re.ValidationJ < re.BusyJ) {
		t.Errorf("validation %v s, %v J (busy %v J): want verify ∪ validate, 11 ms, the persist left out", re.ValidationS, re.ValidationJ, re.BusyJ)
	}
	if re.MeterCPUS <= 0 {
		t.Errorf("meter CPU %v, want the readings' CPU counted", re.MeterCPUS)
	}
}
