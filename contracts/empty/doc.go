// Package empty is a contract that does nothing: every function it is
// called with succeeds at once with an empty result, reading and writing
// no state. It measures the ledger's overhead without contract work (the
// state-DB study's emptyContract, and a floor for every other workload).
package empty
