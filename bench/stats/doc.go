// Package stats records what a benchmark round measures: latency
// histograms (HDR histograms: 1 µs to 10 min at 3 significant digits,
// constant memory whatever the count), a per-second time series of sent,
// committed, VALID and failed transactions, and counts by validation code.
//
// A Recorder is safe for concurrent use by every client of a round; its
// fields are guarded by one mutex (mu), held only to add a sample.
// Snapshot returns a plain Result that shares nothing with the Recorder.
//
// Invariants of a Result: Committed = Σ ByCode; Valid = ByCode["VALID"];
// Σ over Series of Committed = Committed (every sample falls into one
// second, times before 0 into the first, so nothing is lost); the
// latency histogram holds one sample per committed transaction.
package stats
