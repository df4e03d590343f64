// Package conformance is the test suite every statedb backend must pass,
// and the benchmark suite every backend is measured with.
//
// A backend's test calls Run with a Factory; its benchmark calls
// RunBenchmarks with the same Factory:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Factory{Name: "mem", Open: open})
//	}
//
// Run checks the statedb.DB contract as documented in package statedb:
// versions, deletes, empty values, last-write-wins within a batch, GetMany,
// Scan bounds and namespace isolation, binary keys, large values, the
// savepoint order, rejection of whole batches with an invalid namespace,
// caller-owned values, ErrClosed after Close, atomic visibility of a batch
// to concurrent readers, persistence across reopen (for Persistent
// backends), and a randomized comparison against a map-based model.
//
// Invariants the suite relies on: each subtest gets a fresh directory from
// t.TempDir(), so Open must create a database in an empty directory, and
// a Persistent backend must find the same state after Close and Open on
// that directory. The randomized test logs its seed; set
// STRAND_CONFORMANCE_SEED to replay one.
package conformance
