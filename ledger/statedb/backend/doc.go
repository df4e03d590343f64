// Package backend opens a state database by name: it is the registry of
// every statedb backend this binary has, so that node configuration picks
// one with a single field (stateDB.backend) and the node calls one
// function, Open.
//
// Invariants: Names lists exactly the names Open accepts; an unknown name,
// or one whose backend is not compiled in (rocksdb without the rocksdb
// build tag), is refused with an error that lists the names allowed, and
// says how to build the missing one. Every on-disk backend claims its
// directory (statedb.ClaimDir), so Open with one name never reads a
// directory written under another.
package backend
