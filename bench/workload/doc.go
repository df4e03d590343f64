// Package workload generates the operations of strand's benchmark
// workloads, as docs WORKLOADS.md defines them: smallbank (Caliper's
// modify mix and H-Store's mix), ycsb (A to F or a custom mix such as
// read=10,update=90), fixedasset, kmeans, scm (scm95, scm99) and empty.
//
// A Workload is built by New from its name and string parameters; every
// parameter is checked, and an error names the workload, the parameter,
// the value and what is allowed. A Workload gives
//
//   - Setup: the stages of transactions that prepare state (accounts,
//     records, assets, points, vendors and contracts). Stages run in
//     order; the operations of one stage are independent and may run
//     concurrently.
//   - Client: one generator per benchmark client. A generator draws from
//     its own PCG generator seeded with (seed, client), so the same seed
//     gives the same operations (determinism by seed), and clients never
//     share mutable state.
//
// Keys are namespaced by Env.Run, so rounds against a long-lived network
// do not collide with earlier ones (scm's vendors and products are the
// exception: setup overwrites them blindly).
//
// Generators do not learn whether their operations committed. Where an
// operation refers to an earlier one of the same client (ycsb D reading
// the latest insert, scm updating an order it placed) and that one failed
// or has not committed yet, the later one fails in endorsement; runs
// count such failures as errors.
package workload
