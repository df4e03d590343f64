package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
)

// Follow keeps a committer fed with blocks from the ordering service until
// ctx ends. It asks an orderer for blocks from the committer's next
// expected number and delivers them in order; on any failure (the stream
// ends, the orderer goes away, a block is refused) it moves to the next
// orderer after a backoff and asks again from the committer's next number.
// The committer is the only state, so a failover or restart can neither
// skip nor repeat a block. It returns ctx's error, or the committer's
// fatal error.
func Follow(ctx context.Context, orderers []api.OrdererClient, channel string, c *committer.Committer, log *slog.Logger) error {
	if len(orderers) == 0 {
		return fmt.Errorf("node: no orderer to follow")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	backoff := minBackoff
	for i := 0; ; i = (i + 1) % len(orderers) {
		start := c.Next()
		got, err := followOne(ctx, orderers[i], channel, c, start)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, committer.ErrFailed) || errors.Is(err, committer.ErrClosed) {
			return err
		}
		if got > 0 {
			backoff = minBackoff
		}
		log.Warn("block stream from orderer ended; reconnecting", "orderer", i, "from", start, "blocks", got, "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// followOne streams from one orderer until the stream fails; it returns
// how many blocks it delivered.
func followOne(ctx context.Context, o api.OrdererClient, channel string, c *committer.Committer, start uint64) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := o.Deliver(ctx, &api.DeliverRequest{Channel: channel, Start: start})
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return n, fmt.Errorf("node: orderer closed the block stream")
		}
		if err != nil {
			return n, err
		}
		if err := c.Deliver(resp.Block); err != nil {
			return n, err
		}
		n++
	}
}
