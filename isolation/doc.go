// Package isolation keeps a strand network's throughput and latency when
// other workloads share its CPUs, by raising the CPU weight of its node
// processes while they suffer interference: the proportional controller of
// QiOi, a component-level performance isolation technique for Hyperledger
// Fabric (its Algorithm 1), with a latency objective, a learned threshold,
// decay and per-component gains added.
//
// # Parts
//
// Controller is the decision core. It is pure: measurements (the nodes'
// scheduling delay, committed throughput, p99 commit latency, idleness)
// and the time each period ended come in through Observe; share changes,
// each with its reason, come out. It reads no clock, starts no goroutine
// and touches no file, and testdata/controller.txt shows every case. Its
// rule, per component with gain k, where D is the nodes' mean run-queue
// wait per time slice and W its target, T the throughput threshold, A the
// throughput, L the p99 target:
//
//	e = max(1−W/D if D > W, (T−A)/T if A < T, (p99−L)/L if p99 > L)
//	    (0 when idle; with W set, 0 unless D > W)
//	e > 0:  S = 1024 + 1024·k·e, clamped to [1024, Cap]       (QiOi)
//	e = 0:  S − 1024 halves every DecayHalfLife, down to 1024  (QiOi holds S)
//
// The delay gate is what tells interference (the nodes wait for a CPU)
// from a client slowing down (throughput falls, the nodes idle).
//
// With no configured T, the controller learns it as CalibrationFraction of
// the mean busy throughput over the first Calibration.
//
// Actuator is the I/O half. It detects the hierarchy when it opens (a
// directory with cpu.shares is cgroup v1; one with cgroup.controllers is
// cgroup v2 and must delegate cpu to its children), makes one cgroup per
// component, moves processes into them and writes their weight: the share
// itself as v1 cpu.shares (2..262144, default 1024), or Shares.Weight as v2
// cpu.weight (1..10000, default 100), which schedules the same. The
// subtree itself weighs the sum of its components' shares, so that the
// components stand against a neighbour beside the subtree as containers
// side by side would, and raising one takes CPU from the neighbour rather
// than from the other components. SetQuota caps a component at a number
// of cores (CFS bandwidth control); the bench uses it for node budgets.
//
// Loop is the one goroutine that owns both (loop.go): it moves the node
// processes into their components' cgroups, reads every peer's own
// /metrics and every node's /proc/PID/task/*/schedstat once per period
// (and once as it starts, so the first period makes a sample), turns two
// consecutive readings into a Sample (Measure, measure.go: the mean
// committed-transactions rate and the p99 of the gateway commit-latency
// histogram's increase; Delay, schedstat.go: the mean run-queue wait per
// time slice, counted thread by thread with each wait bounded by the
// period; the delay alone when no peer answered),
// feeds Observe,
// applies and logs the changes, and drops a node whose process left its
// cgroup. With LoopConfig.Probe it also reads the schedstat files alone
// between periods and passes the delay to Controller.Probe, which only
// raises shares (above ProbeFactor times the delay target). Its LoopMetrics snapshot is what `strand isolate --metrics`
// exports as strand_isolation_*.
//
// # Invariants
//
//   - Every share the controller holds or reports is in [1024, Cap], and
//     Cap ≤ 102400, the share v2's largest weight schedules like, so both
//     hierarchies realise every decision exactly (to one weight step).
//   - Shares never fall below the default: boosting strand never starves
//     it, and neighbours keep their default weight.
//   - Every change is reported once, with a reason; none is reported when
//     no whole share changes.
//   - The actuator writes only inside its own subtree, Parent/Prefix-PID,
//     and into the cgroup.procs that processes leave to; it removes only
//     its own subtree and those of runs whose PID is dead; it never
//     signals a process.
//
// # The caller's duties
//
// One loop owns both halves: it measures a period, calls Observe with the
// period's end time, and Actuator.Apply's the changes in order. It moves
// each node process into its component's cgroup right after starting it
// (children forked afterwards follow). When the threshold is learned, the
// first Calibration of load must run with no neighbour competing. On
// shutdown it applies Controller.Stop's changes (every component back to
// the default) and then calls Actuator.Close. An Apply error means a
// cgroup vanished or became unwritable: stop and Close rather than retry.
//
// When the loop's process dies without this (SIGKILL, a crash), the shares
// stay where they last were, which is valid (every share is in
// [1024, Cap]), the nodes run on in the dead run's cgroups, and the next
// Open moves them back to Parent and removes those cgroups.
//
// # What it changes on the host
//
// Open creates Parent/Prefix-PID and one directory per component below it
// (under v2 it also enables cpu in the subtree's cgroup.subtree_control),
// and removes the subtrees of earlier runs that died without Close, moving
// their processes to Parent first. Close moves any process still in the
// subtree to Parent (under v2, to the root when Parent may not hold
// processes) and removes the subtree. Nothing outside the subtree changes
// weight: after Close, or after a later Open cleaned up a crash, the host's
// cgroups are as they were, and the moved processes run at Parent's
// weight.
package isolation
