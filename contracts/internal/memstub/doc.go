// Package memstub is an in-memory contract.Stub for the built-in contracts'
// tests: a sorted map of committed state plus the pending writes of the
// call in progress.
//
// Stub.Call runs one transaction the way the endorser and committer do for
// a single peer: the call reads committed state plus its own earlier writes
// (read-your-writes), and its writes are applied only if it returns no
// error. It records the keys the call read and wrote, so tests can compare
// a contract's read/write set with the one a benchmark model expects.
//
// It is not the endorser's Stub and checks no MVCC versions; it is internal
// to contracts/ so that nothing else depends on it.
package memstub
