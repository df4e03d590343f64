package tiered

import "time"

// loseMemoryTier simulates the loss of the memory tier (a memory node
// that restarts): the flusher stops without flushing, and an empty tier
// and cache take their place at the storage tier's savepoint, as Open
// would start them. The caller runs no other call meanwhile.
func (d *DB) loseMemoryTier() {
	if err := d.flusher.halt(false); err != nil {
		panic(err)
	}
	sp := d.flusher.durable()
	d.viewMu.Lock()
	d.mem = newLocalTier(sp)
	d.cache.Reset(sp)
	d.viewMu.Unlock()
	d.flusher = newFlusher(d, d.policy(), sp, time.Now())
}
