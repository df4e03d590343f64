package committer

import (
	"bytes"
	"fmt"
	"log/slog"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// Repair restores the damaged blocks of store (ledger.BlockStore.Damaged)
// from fetched, copies of them taken from the ordering service by number,
// and brings db up to the store's height on the way. Call it before New,
// with a state database whose savepoint is at or below the lowest damaged
// block (node.StartPeer rebuilds the state from empty when it is not).
//
// # Why the state is rebuilt
//
// A damaged block's stored validation codes are lost with its bytes, and
// the ordering service's copy carries none: the orderer signs the header,
// and the codes are the peer's own decision. They must be decided again,
// and MVCC decides block n against the state as of block n-1. The state
// database keeps one version per key, so once it holds block n's writes
// (or later ones) that state is gone; no read-only view of the present
// state can stand in for it. So the state is replayed from below the
// damage: blocks before a damaged one are re-applied with their stored
// codes (no signature checked: the block store holds only codes this
// committer decided), and each damaged block is validated in full —
// CheckBlock (its link to the block below, its data hash, the orderer's
// signature), every transaction's signatures and policy, duplicate tx
// ids, MVCC — against exactly the state it was first validated against.
// Validation is deterministic, so the codes are the ones first decided,
// and the state reached at the top is the state the peer had. No write
// is applied twice: the state starts below the damage and every block
// above it is applied once. The cost is a replay of the chain from the
// state's savepoint, which re-applies stored codes without verifying
// signatures.
//
// # Crash safety
//
// The state batches of re-applied blocks go to db as recovery's do; a
// damaged block's replacement is made durable (ledger.BlockStore.Replace)
// before its writes reach the state. A crash at any point leaves a state
// savepoint at or below the next damaged block, or a store in which that
// block is already replaced: the next start resumes.
func Repair(ch Channel, store *ledger.BlockStore, db statedb.DB, fetched map[uint64][]byte, log *slog.Logger) error {
	damaged := store.Damaged()
	if len(damaged) == 0 {
		return nil
	}
	if err := ch.validate(); err != nil {
		return err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Committer{ch: ch, store: store, db: db, log: log}
	sp, err := db.Savepoint()
	if err != nil {
		return fmt.Errorf("committer: repair: reading the state savepoint: %w", err)
	}
	if low := damaged[0].Block; sp > low {
		return fmt.Errorf("committer: repair: the state savepoint %d is above damaged block %d: the state must be rebuilt from below it first", sp, low)
	}
	isDamaged := make(map[uint64]bool, len(damaged))
	for _, d := range damaged {
		isDamaged[d.Block] = true
	}
	height := store.Height()
	log.Info("repairing damaged blocks: replaying the state from its savepoint", "damaged", len(damaged), "from", sp, "to", height-1)
	var batch statedb.Batch
	var ends []int
	flush := func(n uint64) error { // the state as of block n-1, synced (rarely: per damaged block and every recoverBatchBlocks)
		if len(ends) == 0 {
			return nil
		}
		if err := applyState(db, batch.Writes, ends, n, true); err != nil {
			return fmt.Errorf("committer: repair: applying blocks up to %d: %w", n-1, err)
		}
		batch.Reset()
		ends = ends[:0]
		return nil
	}
	for n := sp; n < height; n++ {
		if isDamaged[n] {
			if err := flush(n); err != nil {
				return err
			}
			if err := c.revalidate(n, fetched[n], &batch); err != nil {
				return err
			}
		} else if err := c.reapply(n, &batch); err != nil {
			return err
		}
		ends = append(ends, len(batch.Writes))
		if len(ends) == recoverBatchBlocks {
			if err := flush(n + 1); err != nil {
				return err
			}
		}
	}
	if err := flush(height); err != nil {
		return err
	}
	log.Info("repaired damaged blocks", "blocks", len(damaged), "height", height)
	return nil
}

// revalidate validates raw, the ordering service's copy of damaged block
// n, against the state as of block n-1 (which db now holds), stores it
// with its codes in place of the damaged frame, and adds its valid writes
// to batch.
func (c *Committer) revalidate(n uint64, raw []byte, batch *statedb.Batch) error {
	if raw == nil {
		return fmt.Errorf("committer: repair: no copy of damaged block %d was fetched", n)
	}
	blk, err := api.DecodeBlock(raw)
	if err != nil || blk.Header == nil || blk.Header.Number != n {
		return fmt.Errorf("committer: repair: the copy of block %d does not decode as block %d (%v)", n, n, err)
	}
	prev, err := c.headerHashBelow(n)
	if err != nil {
		return err
	}
	hh, err := c.ch.CheckBlock(blk, prev)
	if err != nil {
		return fmt.Errorf("committer: repair: the copy of block %d: %w", n, err)
	}
	ids, codes := []string{""}, []byte{byte(api.TxValidationCode_VALID)}
	if !c.ch.isGenesis(blk) {
		if ids, codes, err = c.decide(n, blk, batch); err != nil {
			return err
		}
	}
	e := ledger.Entry{Number: n, HeaderHash: hh, PrevHash: blk.Header.PreviousHash,
		Raw: api.WithValidationCodes(raw, codes), TxIDs: ids, Codes: codes}
	if err := c.store.Replace(e); err != nil {
		return fmt.Errorf("committer: repair: %w", err)
	}
	return nil
}

// decide is stages 1 and 2 for one block, in this goroutine, against
// c.db as it stands. A tx id counts as a duplicate if a block below n
// claimed it: the index may also hold claims from blocks above n, made
// when those blocks were validated after this one.
func (c *Committer) decide(n uint64, blk *api.Block, batch *statedb.Batch) ([]string, []byte, error) {
	txs := make([]txWork, len(blk.Transactions))
	ids := make([]string, len(txs))
	inBlock := make(map[string]struct{}, len(txs))
	// The definitions in force: those of the state as replayed so far.
	rs, err := c.ch.loadRules(c.db)
	if err != nil {
		return nil, nil, fmt.Errorf("committer: repair: block %d: %w", n, err)
	}
	results := make([]txResult, len(txs))
	for i, raw := range blk.Transactions {
		r := verifyTx(&c.ch, rs, raw)
		results[i] = r
		txs[i] = txWork{code: r.code, ver: statedb.Version{Block: n, Tx: uint32(i)}}
		if r.tx.Response != nil {
			txs[i].rw = r.tx.Response.Rwset
		}
		ids[i] = r.tx.ID()
		if !api.TxIDCounts(r.code) {
			continue
		}
		_, dup := inBlock[ids[i]]
		if loc, ok, err := c.store.TxLocation(ids[i]); err != nil {
			return nil, nil, fmt.Errorf("committer: repair: block %d: %w", n, err)
		} else if ok && loc.Block < n {
			dup = true
		}
		inBlock[ids[i]] = struct{}{}
		if dup {
			txs[i].code = api.TxValidationCode_DUPLICATE_TXID
		}
	}
	nextDefinitions(rs.defs, results, txs, c.log.Warn)
	nextMembers(c.ch.Registry, rs.rev, results, txs, c.log.Warn)
	if err := validateSequential(newView(c.db, 0), txs); err != nil {
		return nil, nil, fmt.Errorf("committer: repair: block %d: reading state: %w", n, err)
	}
	codes := make([]byte, len(txs))
	for i := range txs {
		codes[i] = byte(txs[i].code)
		if txs[i].code == api.TxValidationCode_VALID {
			appendWrites(batch, txs[i].rw, txs[i].ver)
		}
	}
	return ids, codes, nil
}

// headerHashBelow returns the header hash block n must name as previous.
func (c *Committer) headerHashBelow(n uint64) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	if base := c.store.Base(); n == base.Height {
		return bytes.Clone(base.PrevHash), nil
	}
	b, err := c.store.Block(n - 1)
	if err != nil {
		return nil, fmt.Errorf("committer: repair: reading block %d below damaged block %d: %w", n-1, n, err)
	}
	return api.HeaderHash(b.Header), nil
}
