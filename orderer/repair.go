package orderer

import (
	"context"
	"fmt"
	"time"

	"github.com/strand-ledger/strand/api"
)

// repairDamaged replaces the damaged blocks of a Raft member's store
// (ledger.Damage: a frame that fails its checks with sound ones after it)
// with copies fetched from the other members, each checked as catch-up
// checks a block (checkFetchedAt: the link to the stored block below it,
// the data hash, an orderer's signature; ledger.BlockStore.Replace then
// checks the link to the block above). An orderer stores no validation
// codes, so the copy is all it needs. It runs beside the orderer from the
// start until every damaged block is replaced or the orderer stops;
// meanwhile Deliver of a damaged block fails, and a peer reads it from
// another orderer.
func (o *Orderer) repairDamaged() {
	store := o.cfg.Store
	o.cfg.Log.Error("raft: the block store has damaged blocks; fetching them from the other orderers", "channel", o.cfg.Channel, "damaged", fmt.Sprint(store.Damaged()))
	start := time.Now()
	for {
		for _, d := range store.Damaged() {
			for _, l := range o.raft.tr.links() {
				err := o.fetchReplacement(l, d.Block)
				if err == nil {
					break
				}
				o.fetchFailed(l, err)
			}
		}
		if len(store.Damaged()) == 0 {
			o.cfg.Log.Info("raft: replaced every damaged block with a copy from another orderer", "channel", o.cfg.Channel, "took", time.Since(start))
			o.catchUpMembers() // the updates a damaged block held back
			return
		}
		select {
		case <-o.stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// fetchReplacement asks member l for block n and replaces the damaged one
// with it.
func (o *Orderer) fetchReplacement(l *link, n uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := api.NewOrdererClient(l.conn).Deliver(ctx, &api.DeliverRequest{Channel: o.cfg.Channel, Start: n, Stop: true})
	if err != nil {
		return err
	}
	resp, err := stream.Recv()
	if err != nil {
		return err
	}
	var prev []byte
	if n > 0 {
		if prev = o.hashAt(n - 1); prev == nil {
			return fmt.Errorf("block %d, below damaged block %d, cannot be read either", n-1, n)
		}
	}
	e, err := o.checkFetchedAt(resp.GetBlock(), n, prev)
	if err != nil {
		return fmt.Errorf("%w from orderer %d refused: %w", errBadBlock, l.p.ID, err)
	}
	return o.cfg.Store.Replace(e)
}
