package committer

import (
	"fmt"

	"github.com/strand-ledger/strand/api"
)

// reparse decodes a block and its transactions again from the delivered
// bytes, as a peer without a block cache does at each stage (Fabric
// unmarshals the envelope for verification, again for validation and
// again for the ledger write). It is the work Options.Reparse adds to
// stages 2 and 3, and the result is used, not thrown away: stage 2 takes
// the read/write sets from it and stage 3 the transaction ids, so that
// the bench measures a peer that really works this way. A transaction
// that stage 1 could not decode, or a config envelope, comes back nil;
// the caller keeps stage 1's verdict for it.
func reparse(raw []byte) ([]*api.Tx, error) {
	blk, err := api.DecodeBlock(raw)
	if err != nil {
		return nil, fmt.Errorf("committer: decoding a validated block again: %w", err)
	}
	txs := make([]*api.Tx, len(blk.Transactions))
	for i, t := range blk.Transactions {
		if api.IsConfigEnvelope(t) || api.IsMembersEnvelope(t) {
			continue
		}
		if tx, _, err := api.DecodeTx(t); err == nil {
			txs[i] = tx
		}
	}
	return txs, nil
}

// reparseIDs takes a validated block's transaction ids from a fresh
// decode (Options.Reparse, stage 3).
func reparseIDs(p *persistWork) error {
	txs, err := reparse(p.raw)
	if err != nil {
		return err
	}
	for i, tx := range txs {
		if tx != nil && i < len(p.txIDs) {
			p.txIDs[i] = tx.ID()
		}
	}
	return nil
}
