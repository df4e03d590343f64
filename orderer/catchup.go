package orderer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
)

// errFork: a fetched block does not link to the stored chain.
var errFork = errors.New("chain fork")

// errBadBlock: a fetched block failed checkFetched; the member that sent
// it is left for the next one, and the refusal counted (bad_block).
var errBadBlock = errors.New("bad block")

// hashAt returns the header hash of stored block n, nil if it is not
// stored or cannot be read.
func (o *Orderer) hashAt(n uint64) []byte {
	if n+1 == o.cfg.Store.Height() {
		return o.cfg.Store.LastHash()
	}
	raw, err := o.cfg.Store.RawBlock(n)
	if err != nil {
		return nil
	}
	return headerHashOf(raw)
}

// catchUp runs in persist, in order with the blocks: it brings the store
// to st.Height by fetching the missing blocks from the other members'
// Deliver (a Raft snapshot says only "height and hash"; the blocks live
// in every orderer's store), checking each as a peer would, then checks
// that block st.Height-1 has hash st.Hash. It retries the members in turn
// until it succeeds or the orderer closes; a store that disagrees with
// the snapshot is a fatal error.
func (o *Orderer) catchUp(st snapState) {
	store := o.cfg.Store
	o.cfg.Log.Info("raft: catching up from the other orderers", "channel", o.cfg.Channel, "height", store.Height(), "target", st.Height)
	for attempt := 0; store.Height() < st.Height; attempt++ {
		if o.fatal.Load() != nil {
			return
		}
		forked := 0
		links := o.raft.tr.links()
		for _, l := range links {
			if err := o.fetch(l, st.Height); err != nil {
				o.fetchFailed(l, err)
				if errors.Is(err, errFork) {
					forked++
				}
			}
			if store.Height() >= st.Height {
				break
			}
		}
		if forked == len(links) && forked > 0 {
			o.fail(fmt.Errorf("%w: every other orderer's block %d does not link to this store's block %d: this store has forked from the channel's chain",
				ErrFailed, store.Height(), store.Height()-1))
			return
		}
		if store.Height() >= st.Height {
			break
		}
		select {
		case <-o.stop:
			o.fail(fmt.Errorf("%w: closed while catching up to height %d at height %d", ErrFailed, st.Height, store.Height()))
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	if st.Height > 0 && !bytes.Equal(o.hashAt(st.Height-1), st.Hash) {
		o.fail(fmt.Errorf("%w: block %d in the store does not have the hash %x the Raft snapshot names: this store belongs to another chain",
			ErrFailed, st.Height-1, st.Hash))
		return
	}
	o.notify.broadcast()
}

// fetchFailed counts and logs, within the log budget, a catch-up from
// member l that failed: a refused block (bad_block) names the sender and
// the reason; other failures (unreachable, fewer blocks) are logged in
// their own budget.
func (o *Orderer) fetchFailed(l *link, err error) {
	kind, msg := "catch_up", "raft: catch-up from an orderer failed"
	if errors.Is(err, errBadBlock) {
		o.m.refused(refuseBadBlock)
		kind, msg = refuseBadBlock.String(), "raft: refused a block fetched in catch-up"
	}
	o.raft.refusals.warn(o.cfg.Log, kind, msg, "channel", o.cfg.Channel, "raft_id", o.raft.cfg.ID,
		"from", l.p.ID, "from_name", l.p.Org+"/"+l.p.Name, "from_address", l.p.Address, "height", o.cfg.Store.Height(), "reason", err)
}

// fetch appends the blocks from store height up to target that member l
// delivers, checking each.
func (o *Orderer) fetch(l *link, target uint64) error {
	store := o.cfg.Store
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-o.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	stream, err := api.NewOrdererClient(l.conn).Deliver(ctx, &api.DeliverRequest{Channel: o.cfg.Channel, Start: store.Height(), Stop: true})
	if err != nil {
		return err
	}
	for store.Height() < target {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("orderer %d delivered up to height %d, want %d", l.p.ID, store.Height(), target)
		}
		if err != nil {
			return err
		}
		e, err := o.checkFetched(resp.GetBlock())
		if err != nil {
			return fmt.Errorf("%w from orderer %d refused: %w", errBadBlock, l.p.ID, err)
		}
		if err := store.Append([]ledger.Entry{e}); err != nil {
			o.fail(fmt.Errorf("%w: appending fetched block %d: %w", ErrFailed, e.Number, err))
			return err
		}
		o.m.catchUpBlocks.Add(1)
		o.applyMembers([]ledger.Entry{e})
	}
	return nil
}

// checkFetched checks a block from another orderer as a peer would: the
// next number, the link to the stored chain, the data hash, and the
// signature of an orderer of the channel (if it has none, on a channel that
// signs only checkpoints, the authenticated cluster connection vouches for
// it).
func (o *Orderer) checkFetched(raw []byte) (ledger.Entry, error) {
	return o.checkFetchedAt(raw, o.cfg.Store.Height(), o.cfg.Store.LastHash())
}

// checkFetchedAt is checkFetched for block want, whose previous hash must
// be prev.
func (o *Orderer) checkFetchedAt(raw []byte, want uint64, prev []byte) (ledger.Entry, error) {
	b, err := api.DecodeBlock(raw)
	if err != nil {
		return ledger.Entry{}, err
	}
	h := b.GetHeader()
	switch {
	case h.GetNumber() != want:
		return ledger.Entry{}, fmt.Errorf("block %d, want %d", h.GetNumber(), want)
	case want > 0 && !bytes.Equal(h.GetPreviousHash(), prev):
		return ledger.Entry{}, fmt.Errorf("%w: block %d does not link to the stored block %d", errFork, want, want-1)
	case !bytes.Equal(h.GetDataHash(), api.DataHash(b.Transactions)):
		return ledger.Entry{}, fmt.Errorf("block %d: data hash does not match its transactions", want)
	}
	hh := api.HeaderHash(h)
	sig := b.GetMetadata().GetSignature()
	if sig == nil && o.cfg.Checkpoints.Enabled() {
		// Between checkpoints: vouched for by the cluster connection's
		// mutual TLS, and by the next checkpoint's signature over the chain.
		return o.fetchedEntry(want, hh, h.GetPreviousHash(), raw, b)
	}
	m, err := o.cfg.Registry.Member(sig.GetSigner())
	if err != nil {
		return ledger.Entry{}, fmt.Errorf("block %d signer: %w", want, err)
	}
	if m.Role != identity.RoleOrderer {
		return ledger.Entry{}, fmt.Errorf("block %d signed by %s/%s of role %s, want orderer", want, m.Org, m.Name, m.Role)
	}
	if err := m.Verify(hh, sig.GetSignature()); err != nil {
		return ledger.Entry{}, fmt.Errorf("block %d: %w", want, err)
	}
	return o.fetchedEntry(want, hh, h.GetPreviousHash(), raw, b)
}

// fetchedEntry turns a checked block into its store entry.
func (o *Orderer) fetchedEntry(want uint64, hh, prev, raw []byte, b *api.Block) (ledger.Entry, error) {
	ids := make([]string, len(b.Transactions))
	for i, tx := range b.Transactions {
		if api.IsConfigEnvelope(tx) { // a config block; applied from the Raft log, not from here
			env, _, err := api.DecodeConfigEnvelope(tx)
			if err != nil {
				return ledger.Entry{}, fmt.Errorf("block %d tx %d: %w", want, i, err)
			}
			ids[i] = env.ID()
			continue
		}
		if api.IsMembersEnvelope(tx) { // applied once stored (applyMembers)
			ids[i] = api.MembersID(tx)
			continue
		}
		if want > 0 || o.cfg.Genesis == nil { // block 0 with a genesis document holds no transaction
			t, _, err := api.DecodeTx(tx)
			if err != nil {
				return ledger.Entry{}, fmt.Errorf("block %d tx %d: %w", want, i, err)
			}
			ids[i] = t.ID()
		}
	}
	codes := bytes.Repeat([]byte{byte(api.TxValidationCode_NOT_VALIDATED)}, len(b.Transactions))
	return ledger.Entry{Number: want, HeaderHash: hh, PrevHash: prev, Raw: api.WithValidationCodes(raw, codes), TxIDs: ids, Codes: codes}, nil
}
