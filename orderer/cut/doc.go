// Package cut decides where a channel's blocks end: the orderer's ordered
// path as pure decisions, with time as an argument.
//
// Three types, each a state machine without goroutines, clocks or I/O:
//
//   - Cutter closes a batch when it is full (Config.MaxTxs, MaxBytes), in
//     block mode when its Timeout has passed, and in stream mode whenever
//     the next stage is free (StreamChain). testdata/cutter.txt shows
//     every case.
//   - Pacer remembers the committed heights that peers' gateways report;
//     it answers whether a peer that reported lately is behind the blocks
//     cut so far.
//   - Flow is what the orderer's loop drives: a Cutter, the tx ids of the
//     pending transactions, config updates cut alone, and in stream mode
//     the hold of a cut while the Pacer says a peer is behind (at most
//     PaceMaxHold). Its doc comment states the loop's contract;
//     testdata/flow.txt shows every case.
//
// The orderer's loop (orderer/orderer.go) is the I/O side: it reads the
// clock, arms one timer for Flow.Deadline, counts the batches in flight
// downstream and hands the batches on. Nothing here hashes, signs or
// writes, so a cut costs microseconds and the ordered path stays free of
// crypto.
package cut
