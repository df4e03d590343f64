package committer

import (
	"errors"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// applyState writes the state of consecutive blocks, the last of which
// brings the state to height, and sets the savepoint to height. writes
// holds the blocks' writes in order, and block i's end at ends[i].
//
// It tries one Apply. A backend that refuses the batch as too big for one
// atomic write (statedb.ErrBatchTooBig, Badger's transaction limit) has
// written nothing, so the blocks are applied in halves, split at a block
// boundary, recursively: every part is atomic with its own savepoint, so
// the state on disk is always that of some block height, as recovery and
// readers expect. Only a single block too big for the backend fails.
func applyState(db statedb.DB, writes []statedb.Write, ends []int, height uint64, sync bool) error {
	err := db.Apply(&statedb.Batch{Writes: writes}, height, sync)
	if len(ends) < 2 || !errors.Is(err, statedb.ErrBatchTooBig) {
		return err
	}
	half := len(ends) / 2
	cut := ends[half-1]
	if err := applyState(db, writes[:cut], ends[:half], height-uint64(len(ends)-half), sync); err != nil {
		return err
	}
	rest := make([]int, len(ends)-half)
	for i, e := range ends[half:] {
		rest[i] = e - cut
	}
	return applyState(db, writes[cut:], rest, height, sync)
}
