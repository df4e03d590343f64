package node

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
)

// Repairs counts what a peer repaired at start, with no operator: see
// openState and repairBlocks.
type Repairs struct {
	StateRebuilds uint64        `metric:"counter"` // Times the state database was rebuilt from the block store at start.
	Fetched       uint64        `metric:"counter"` // Damaged blocks fetched from the ordering service and replaced at start.
	Took          time.Duration `metric:"gauge"`   // How long the repair of damaged blocks at start took.
}

// fetchTimeout bounds the search for one damaged block's copy among the
// orderers (which may still be starting, after a whole network restart).
const fetchTimeout = 30 * time.Second

// openState opens the state database. The block store is the truth, and
// the state must be rebuilt from it when the state holds writes of blocks
// the store lacks or cannot read:
//
//   - its savepoint is above the store's height: the store lost its tail
//     (a machine crash with relaxed durability, see committer's
//     "Durability", or a torn or damaged last frame cut at open);
//   - its savepoint is above a damaged block (ledger.Damage), whose
//     validation codes must be decided again against the state below it
//     (committer.Repair says why).
//
// The state is then removed (renamed aside first, so that a crash cannot
// leave a half-deleted database) and opened empty; committer.Repair and
// committer.New replay it from the block store, and the peer fetches the
// blocks it lost from the ordering service as usual. A block store that
// starts at a snapshot base cannot rebuild the state, so that case is
// refused instead.
func openState(cfg *NodeConfig, height, base uint64, damaged []ledger.Damage, repairs *Repairs, log *slog.Logger) (statedb.DB, error) {
	dir := filepath.Join(cfg.DataDir, "state")
	aside := dir + ".discarded"
	if err := os.RemoveAll(aside); err != nil {
		return nil, fmt.Errorf("node: removing %s, left by an interrupted state rebuild: %w", aside, err)
	}
	db, err := cfg.openStateDB(dir)
	if err != nil {
		return nil, err
	}
	sp, err := db.Savepoint()
	if err != nil {
		db.Close()
		return nil, err
	}
	limit, why := height, fmt.Sprintf("the state database (savepoint %d) is ahead of the block store (height %d)", sp, height)
	if len(damaged) > 0 && damaged[0].Block < limit {
		d := damaged[0]
		limit, why = d.Block, fmt.Sprintf("the state database (savepoint %d) holds the writes of damaged block %d (%s)", sp, d.Block, d)
	}
	if sp <= limit || cfg.StateDB.Backend == "memory" {
		return db, nil
	}
	if cfg.StateDB.Backend == backend.Memnode {
		db.Close()
		return nil, fmt.Errorf("node: %s; the state lives on the memory node %s, which this peer cannot rebuild: "+
			"stop it, empty its data directory and start it again, then this peer", why, cfg.StateDB.Memnode.Address)
	}
	if base > 0 {
		db.Close()
		return nil, fmt.Errorf("node: %s, and the block store starts at block %d from a snapshot, so cannot rebuild it: "+
			"join this peer from a snapshot again, with a fresh data directory", why, base)
	}
	log.Warn("rebuilding the state database from the block store: "+why, "savepoint", sp, "height", height)
	if err := db.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(dir, aside); err != nil {
		return nil, fmt.Errorf("node: moving the state database aside to rebuild it: %w", err)
	}
	if err := os.RemoveAll(aside); err != nil {
		return nil, fmt.Errorf("node: removing the state database to rebuild it: %w", err)
	}
	repairs.StateRebuilds++
	return cfg.openStateDB(dir)
}

// repairBlocks fetches every damaged block of the store from the
// ordering service and has committer.Repair validate and replace them
// (which authenticates each copy: its links to its neighbours, its data
// hash, the orderer's signature).
func repairBlocks(ch committer.Channel, store *ledger.BlockStore, state statedb.DB, orderers func() []api.OrdererClient, repairs *Repairs, log *slog.Logger) error {
	damaged := store.Damaged()
	if len(damaged) == 0 {
		return nil
	}
	start := time.Now()
	fetched := make(map[uint64][]byte, len(damaged))
	for _, d := range damaged {
		log.Error("block store: damaged block; fetching it from the ordering service", "damage", d.String())
		n := d.Block
		raw, err := fetchBlock(orderers, ch.Name, n, func(raw []byte) error { return checkCopy(&ch, store, n, raw) }, log)
		if err != nil {
			return err
		}
		fetched[d.Block] = raw
	}
	if err := committer.Repair(ch, store, state, fetched, log); err != nil {
		return err
	}
	repairs.Fetched += uint64(len(damaged))
	repairs.Took = time.Since(start)
	log.Info("block store repaired from the ordering service", "blocks", len(damaged), "height", store.Height(), "took", repairs.Took)
	return nil
}

// fetchBlock asks the orderers in turn for block n until one sends a copy
// that check accepts: an orderer that sends a bad copy (a faulty or
// hostile one) costs a try, not the repair.
func fetchBlock(orderers func() []api.OrdererClient, channel string, n uint64, check func([]byte) error, log *slog.Logger) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		for _, o := range orderers() {
			raw, err := fetchFrom(ctx, o, channel, n)
			if err == nil {
				if err = check(raw); err == nil {
					return raw, nil
				}
				log.Warn("an orderer sent a copy of a damaged block that does not check; trying the next", "block", n, "orderer", o, "err", err)
			}
			last = err
			log.Debug("fetching a damaged block", "block", n, "orderer", o, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("node: no orderer sent block %d within %v (last error: %v)", n, fetchTimeout, last)
}

func fetchFrom(ctx context.Context, o api.OrdererClient, channel string, n uint64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	stream, err := o.Deliver(ctx, &api.DeliverRequest{Channel: channel, Start: n, Stop: true})
	if err != nil {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	b, err := api.DecodeBlock(resp.GetBlock())
	if err != nil || b.GetHeader().GetNumber() != n {
		return nil, fmt.Errorf("sent a block that does not decode as block %d (%v)", n, err)
	}
	return resp.GetBlock(), nil
}

// checkCopy authenticates a fetched copy of damaged block n as far as the
// store's readable neighbours allow: its link to block n-1, block n+1's
// link to it, its data hash and the orderer's signature
// (committer.Channel.CheckBlock). committer.Repair checks it again, in
// full; checking here lets fetchBlock move on to the next orderer.
func checkCopy(ch *committer.Channel, store *ledger.BlockStore, n uint64, raw []byte) error {
	b, err := api.DecodeBlock(raw)
	if err != nil {
		return fmt.Errorf("node: copy of block %d: %w", n, err)
	}
	prev := b.GetHeader().GetPreviousHash() // a damaged block n-1: checked by Repair
	if n > 0 {
		if pb, err := store.Block(n - 1); err == nil {
			prev = api.HeaderHash(pb.Header)
		}
	}
	hh, err := ch.CheckBlock(b, prev)
	if err != nil {
		return fmt.Errorf("node: copy of block %d: %w", n, err)
	}
	if n+1 < store.Height() {
		if nb, err := store.Block(n + 1); err == nil && !bytes.Equal(nb.Header.PreviousHash, hh) {
			return fmt.Errorf("node: copy of block %d: header hash %.8x, but the stored block %d names %.8x before it", n, hh, n+1, nb.Header.PreviousHash)
		}
	}
	return nil
}
