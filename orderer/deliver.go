package orderer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/strand-ledger/strand/internal/caller"
	"github.com/strand-ledger/strand/ledger"
)

// AuthorizeRead checks the caller of a Deliver call against the channel's
// read policy, Config.Readers (caller.CheckRead); the error wraps
// ErrForbidden.
func (o *Orderer) AuthorizeRead(ctx context.Context) error {
	if err := caller.CheckRead(ctx, o.cfg.Registry, o.cfg.Readers, o.cfg.Channel); err != nil {
		return fmt.Errorf("%w: %w", ErrForbidden, err)
	}
	return nil
}

// Deliver streams the raw bytes of blocks start, start+1, ... to send, in
// order, each exactly as stored (signed by the orderer). Only durable
// blocks are ever sent. Without follow it ends (nil) when it has sent
// every block stored by then; a start at or beyond the height sends
// nothing. With follow it then waits for new blocks and sends them as they
// are stored, until ctx is done (ctx's error) or the orderer closes
// (ErrClosed, after the last stored block was sent). An error from send
// ends it and is returned. Any number of Deliver calls may run at once;
// each reads the store on its own, so a slow one holds back nobody.
func (o *Orderer) Deliver(ctx context.Context, start uint64, follow bool, send func(raw []byte) error) error {
	it := o.cfg.Store.Iterator(start)
	defer it.Close()
	for {
		// Take the wake-up channel before reading to the end, so that a
		// block stored after the read closes it and is not missed.
		wake := o.notify.wait()
		if err := o.sendStored(ctx, it, send); err != nil {
			return err
		}
		if !follow {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("orderer: deliver of channel %q: %w", o.cfg.Channel, ctx.Err())
		case <-o.done:
			if err := o.sendStored(ctx, it, send); err != nil {
				return err
			}
			return fmt.Errorf("%w: deliver of channel %q ended at height %d", ErrClosed, o.cfg.Channel, o.cfg.Store.Height())
		}
	}
}

// sendStored sends blocks from the iterator until it reaches the end of
// the store.
func (o *Orderer) sendStored(ctx context.Context, it *ledger.Iterator, send func([]byte) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("orderer: deliver of channel %q: %w", o.cfg.Channel, err)
		}
		n, raw, err := it.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("orderer: deliver of channel %q: reading the block store: %w", o.cfg.Channel, err)
		}
		if err := send(raw); err != nil {
			return fmt.Errorf("orderer: deliver of channel %q: sending block %d: %w", o.cfg.Channel, n, err)
		}
		o.m.delivered.Add(1)
	}
}
