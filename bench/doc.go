// Package bench measures strand. It holds two benchmarks and the pieces
// they share.
//
// The validator benchmark (ValidatorConfig, RunValidator) replays a
// generated, fully signed Smallbank chain into a fresh validating peer in
// a process of its own and compares its rate with the crypto bound
// (MeasureCryptoRates, NetworkBound); docs/validator.md.
//
// Rounds (Round, Run) drive a whole network: an embedded one started
// afresh for each round (StartEmbedded: real gRPC over mutual TLS on
// 127.0.0.1 in this process), one of node processes (StartProcesses,
// network: processes) or one `strand net up` runs (OpenNet). A
// round builds its workload (bench/workload), runs the workload's setup,
// then starts transactions as its rate controller (bench/rate) decides,
// from Clients clients that each hold their own identity, and records
// what happened (bench/stats) and what each process used (/proc, once a
// second). After the load it checks the network: every peer at the same
// height with the same state, and for Smallbank the money invariant.
// bench/report renders Results; docs/bench.md describes them.
//
// A round can drive several channels of one network at once
// (channels.go): a lane per channel with its own workload, clients and
// figures beside the aggregate, and checks per channel.
//
// On node processes a round can also run co-located CPU hogs (hog.go),
// the QiOi controller (package isolation) and CPU quotas per node role
// (interference.go for the fields, interfere.go for the order of events);
// the qioi preset (qioipreset.go, docs/isolation.md) is built from them.
//
// Invariants of Run:
//   - The control loop is the only goroutine that counts starts and
//     completions, so the controller sees consistent counts; transactions
//     in flight never exceed Round.MaxOutstanding, so the channels sized
//     by it never block a sender.
//   - Latency runs from a transaction's intended start (the loop's tick),
//     so queueing in the load generator shows rather than hides.
//   - Money a Smallbank transaction adds counts only when it commits
//     VALID; the invariant check compares the peers' total with exactly
//     that sum.
//   - A failed check still returns the Result, with an error wrapping
//     ErrCheckFailed, so reports show the failing round.
//   - Every cgroup, hog and node process a round starts ends with it: on
//     return, on a failed start, and when the harness is killed (nodes by
//     PR_SET_PDEATHSIG, hogs at their stdin's end, cgroups at the next
//     round's start).
package bench
