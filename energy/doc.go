// Package energy measures the energy a strand node uses, and how much of
// it went to work rather than to waiting.
//
// # Meters
//
// A Meter returns cumulative Readings; a Log keeps one meter's readings
// in time order (the study logged every 10 ms; bench's recorder reads at
// each busy edge and every 100 ms between). The meters read their files
// only when asked; Union, Overlay
// and ModelJoules are pure, and time is always an argument. Two meters
// exist:
//
//   - RAPL (SourceRAPL): the processor's own counters through Linux
//     powercap (/sys/class/powercap/intel-rapl:N, subzones
//     intel-rapl:N:M). A Reading's Joules is the package domains plus the
//     DRAM domains, the study's "CPU and DRAM"; core (PP0), uncore and
//     psys are listed per domain but not added, as they overlap the
//     packages; intel-rapl-mmio zones read the same package again and
//     are skipped. Counters wrap at max_energy_range_uj; a count below the
//     last one is one wrap, so the meter must be read more often than a
//     counter can wrap (22 minutes at 200 W on Intel servers, 21 s on
//     parts with a 2^32 µJ range).
//
//   - The model (SourceModel), where no counter exists (virtual
//     machines, kernels without powercap), or where RAPL exists but may
//     not be read and the model is asked for by name. Over wall
//     time t, with B the core-seconds the measured processes ran
//     (utime+stime from /proc/PID/stat) and C the cores they may use:
//
//     E = ActiveWatts·B + IdleWatts·max(0, C·t − B)
//
//     This is the study's socket regression (§III-B2, P = Ca·Pa + Ci·Pi)
//     integrated over time, with the measured processes' CPU time
//     standing in for the active cores. Defaults: IdleWatts 1.44 W, the
//     study's fitted idle-core power; ActiveWatts 8.5 W, the study CPU's
//     TDP per core (Xeon Silver 4114: 85 W, 10 cores), a ceiling rather
//     than a fit; C this machine's logical CPUs. All three are
//     overridable, and a modelled figure is an estimate to compare runs
//     on one machine with, not a measurement.
//
// # Idle exclusion
//
// A validating peer waits between blocks, and at low load that waiting
// dominates a whole-interval figure and hides any saving in the work
// itself. Overlay does what the study did (§III-B3): it lays the peer's
// own busy intervals (verify, validate, persist; from any number of
// stages, overlapping or not) over the energy log and charges each log
// step's energy to busy time in proportion to how much of the step was
// busy. Metrics reports the busy figure beside the whole one, and the
// study's efficiency, tx/s/J, over both: throughput per watt of mean
// power, which is transactions per joule and so independent of the
// run's length.
//
// # Calibration
//
// Calibrate is the study's measurement (§III-B2) over a RAPL meter: 0 to
// N cores kept busy in turn, the socket's mean power read for each; Fit
// is its regression, P = Ca·Pa + Ci·Pi by least squares, refusing a fit
// that gives impossible power. SaveModel and LoadModel keep the result as
// a model file (active_watts, idle_watts, cores) that the benchmarks load.
//
// # Invariants
//
//   - Every figure carries its Source, and a model figure its
//     ModelParams. Readings, spans and logs from different sources or
//     parameters are never combined: Log.Add, Reading.Sub and Overlay
//     return ErrMixedSources.
//   - A Reading's Joules never falls: RAPL folds wraps in, and the model
//     rises with t and B because IdleWatts ≤ ActiveWatts (Validate
//     refuses the opposite).
//   - Whole ≥ Busy ≥ 0 in energy and time: Overlay charges each step at
//     most its own energy, and busy time only where the log runs.
//   - Every problem with a meter is found at Open: a missing powercap
//     root or package zone is ErrNoRAPL, a zone that cannot be read
//     (permissions, a missing or garbled file) ErrRAPLUnreadable naming
//     the file, impossible model parameters ErrModel. With Source left
//     empty, Open falls back to the model only when there is no RAPL at
//     all, never when RAPL is present but unreadable.
//
// # Caller's duties
//
// Read a meter from one goroutine, at times that only move forward, more
// often than RAPL can wrap. Stamp busy intervals and readings with the
// same clock. Take a model meter's last reading before its processes
// exit: a vanished process is an error, not zero. Set ModelParams.Cores
// to the cores the measured processes may use where that is fewer than
// the machine's (the study subtracted the idle power of cores not given
// to the peer).
package energy
