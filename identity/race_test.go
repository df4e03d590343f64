//go:build race

package identity

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts of code that pools (identity/p256's scratch) vary.
const raceEnabled = true
