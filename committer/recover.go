package committer

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// recoverBatchBlocks bounds the blocks re-applied per state batch.
const recoverBatchBlocks = 256

// recover re-applies the blocks that the block store holds above the state
// savepoint. It trusts the stored validation codes (the block store is
// only ever written with codes this committer decided), so it verifies no
// signature and is deterministic.
func (c *Committer) recover() error {
	height := c.store.Height()
	sp, err := c.db.Savepoint()
	if err != nil {
		return fmt.Errorf("committer: reading the state savepoint: %w", err)
	}
	if sp > height {
		return fmt.Errorf("committer: state savepoint %d is ahead of block store height %d: the state database does not belong to this block store", sp, height)
	}
	if c.ch.Genesis != nil && height > 0 && sp > 0 {
		// The state is past block 0, so reapply will not look at it:
		// check here that this ledger belongs to this channel.
		if err := c.checkStoredGenesis(); err != nil {
			return err
		}
	}
	if base := c.store.Base().Height; sp < base {
		return fmt.Errorf("committer: state savepoint %d is below block %d, where this block store starts (from a snapshot): "+
			"the blocks needed to bring the state up are not here; load the state from the same snapshot", sp, base)
	}
	if sp == height {
		return nil
	}
	c.log.Info("re-applying blocks above the state savepoint", "from", sp, "to", height-1)
	return c.replay(sp, height)
}

// replay re-applies blocks from to height-1 from the block store, in
// state batches of at most recoverBatchBlocks blocks, each with its own
// savepoint.
func (c *Committer) replay(from, height uint64) error {
	var batch statedb.Batch
	var ends []int
	for n := from; n < height; n++ {
		if err := c.reapply(n, &batch); err != nil {
			return err
		}
		ends = append(ends, len(batch.Writes))
		if (n+1-from)%recoverBatchBlocks == 0 || n+1 == height {
			if err := applyState(c.db, batch.Writes, ends, n+1, c.opts.SyncState); err != nil {
				return fmt.Errorf("committer: re-applying blocks up to %d: %w", n, err)
			}
			batch.Reset()
			ends = ends[:0]
		}
	}
	c.metrics.recovered.Add(height - from)
	return nil
}

func (c *Committer) reapply(n uint64, batch *statedb.Batch) error {
	raw, err := c.store.RawBlock(n)
	if err != nil {
		return fmt.Errorf("committer: recovery: %w", err)
	}
	blk := new(api.Block)
	if err := proto.Unmarshal(raw, blk); err != nil {
		return fmt.Errorf("committer: recovery: stored block %d does not decode: %w", n, err)
	}
	if c.ch.isGenesis(blk) {
		return c.ch.checkGenesis(blk)
	}
	codes := blk.GetMetadata().GetValidationCodes()
	if len(codes) != len(blk.Transactions) {
		return fmt.Errorf("committer: recovery: stored block %d has %d validation codes for %d transactions", n, len(codes), len(blk.Transactions))
	}
	for i, raw := range blk.Transactions {
		if api.TxValidationCode(codes[i]) != api.TxValidationCode_VALID || api.IsConfigEnvelope(raw) {
			continue // a config transaction writes no state
		}
		if api.IsMembersEnvelope(raw) {
			_, u, err := api.DecodeMembersEnvelope(raw)
			if err != nil {
				return fmt.Errorf("committer: recovery: stored block %d tx %d is a membership update marked VALID that does not decode: %w", n, i, err)
			}
			appendWrites(batch, membersWrites(u), statedb.Version{Block: n, Tx: uint32(i)})
			continue
		}
		tx, _, err := api.DecodeTx(raw)
		if err != nil {
			return fmt.Errorf("committer: recovery: stored block %d tx %d is marked VALID but does not decode: %w", n, i, err)
		}
		appendWrites(batch, tx.Response.Rwset, statedb.Version{Block: n, Tx: uint32(i)})
	}
	return nil
}

func (c *Committer) checkStoredGenesis() error {
	raw := c.store.Base().Genesis // a store from a snapshot keeps block 0 in its base
	if raw == nil {
		var err error
		if raw, err = c.store.RawBlock(0); err != nil {
			return fmt.Errorf("committer: reading the genesis block: %w", err)
		}
	}
	blk, err := api.DecodeBlock(raw)
	if err != nil || blk.Header == nil {
		return fmt.Errorf("committer: stored genesis block does not decode: %v", err)
	}
	if err := c.ch.checkGenesis(blk); err != nil {
		return fmt.Errorf("committer: this ledger's %w", err)
	}
	return nil
}
