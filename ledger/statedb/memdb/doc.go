// Package memdb is an in-memory statedb backend: a copy-on-write B-tree
// (github.com/google/btree) keyed by the shared key encoding
// (statedb.AppendKey), so its scan order is exactly that of the
// byte-ordered on-disk backends. It serves tests, benchmarks and
// short-lived peers; nothing survives Close.
//
// Invariants:
//   - Readers never block. Each Apply builds the next version of the tree
//     on a private copy-on-write clone and publishes it, with its
//     savepoint, by one atomic pointer store; a reader works on the
//     version it loaded, so it sees all of a batch or none of it, and a
//     Scan sees one consistent version even while batches are applied.
//   - A published tree is never mutated: the writer only writes to its
//     own working tree, whose nodes are copied on write once a version
//     has been published from it.
//   - A batch is validated (namespaces, savepoint order) before any
//     write, so a rejected batch changes nothing.
//   - Values are copied on the way in and on the way out; callers own
//     what they pass and what they get.
//
// Caller's duties: Apply calls are serialised by the caller (memdb also
// serialises them itself); a Scan callback may call any method, including
// Apply and Close.
package memdb
