// Package rate holds the benchmark's rate controllers as pure decision
// cores: they import no clock and do no I/O. Time arrives as an argument.
//
// Contract with the loop that drives a Controller (bench.Run):
//
//  1. The loop calls Poll(now, s) with the time elapsed since the round
//     started and the counts so far (started, completed, outstanding).
//  2. It starts Decision.Start transactions at once, then waits until
//     Decision.Wait has passed or a transaction completes, whichever is
//     first, and polls again. Wait 0 means "until a transaction
//     completes" (closed loop).
//
// Invariants: Start is never negative; a controller only ever looks at
// the numbers it is given, so the same sequence of polls gives the same
// decisions (tests drive them with a fake clock). Controllers are not
// safe for concurrent use: one loop owns each.
//
// Kinds (Caliper's names): fixed-rate (open loop at a total tps),
// fixed-load (keep N outstanding), linear-rate (a ramp from one rate to
// another), maximum-rate (raise the rate stepwise until throughput stops
// growing; the knee is reported).
package rate
