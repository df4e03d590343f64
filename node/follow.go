package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
)

// DefaultStallAfter is Follow's stall timeout: how long the followed
// orderer may send no block before the follower asks the others whether
// they are ahead.
const DefaultStallAfter = 3 * time.Second

// Follow keeps a committer fed with blocks from the ordering service until
// ctx ends. It asks an orderer for blocks from the committer's next
// expected number and delivers them in order; on any failure (the stream
// ends, the orderer goes away, a block is refused) it moves to the next
// orderer after a backoff and asks again from the committer's next number.
//
// An orderer can also be alive and stop sending blocks while the others
// go on: a Raft member cut off from its cluster. So when the followed
// orderer has sent nothing for stallAfter (0: DefaultStallAfter), Follow
// asks every other orderer for the committer's next block, without
// following; if one has it, the followed one is behind, and Follow moves
// to the one that answered. When none has it, the chain is merely idle
// and Follow stays.
//
// The committer is the only state, so a failover or restart can neither
// skip nor repeat a block. It returns ctx's error, or the committer's
// fatal error.
//
// The orderer set may change (config blocks): Follow calls orderersNow
// before each stream, and onBlock, if set, with each block the committer
// took.
func Follow(ctx context.Context, orderersNow func() []api.OrdererClient, channel string, c *committer.Committer, stallAfter time.Duration,
	log *slog.Logger, onBlock func([]byte)) error {
	if len(orderersNow()) == 0 {
		return fmt.Errorf("node: no orderer to follow")
	}
	if stallAfter <= 0 {
		stallAfter = DefaultStallAfter
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &follower{channel: channel, c: c, stallAfter: stallAfter, onBlock: onBlock, now: orderersNow}
	backoff := minBackoff
	for i := 0; ; {
		orderers := orderersNow()
		f.orderers = orderers
		i %= len(orderers)
		start := c.Next()
		got, ahead, err := f.one(ctx, i)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, committer.ErrFailed) || errors.Is(err, committer.ErrClosed) {
			return err
		}
		if errors.Is(err, errStalled) {
			log.Warn("orderer stopped sending blocks while another has the next one; moving to it",
				"orderer", orderers[i], "to", orderers[ahead], "next", c.Next(), "blocks", got, "err", err)
			i, backoff = ahead, minBackoff
			continue
		}
		if got > 0 {
			backoff = minBackoff
		}
		log.Warn("block stream from orderer ended; reconnecting", "orderer", orderers[i], "from", start, "blocks", got, "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
		i = (i + 1) % len(orderers)
	}
}

const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = time.Second // bounds the reconnect delay once the orderers are back
	// probeTimeout bounds one orderer's answer to "do you have block n?".
	probeTimeout = 2 * time.Second
)

// errStalled ends a stream whose orderer sent no block for stallAfter
// while another orderer has the next one.
var errStalled = errors.New("node: the orderer stalled")

type follower struct {
	orderers   []api.OrdererClient // as of the current stream
	channel    string
	c          *committer.Committer
	stallAfter time.Duration
	onBlock    func([]byte)
	now        func() []api.OrdererClient
}

// one streams from orderer i until the stream fails, or until it stalls
// while another orderer is ahead (errStalled, with that orderer's index).
// It returns how many blocks it delivered.
func (f *follower) one(ctx context.Context, i int) (n, ahead int, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := f.orderers[i].Deliver(ctx, &api.DeliverRequest{Channel: f.channel, Start: f.c.Next()})
	if err != nil {
		return 0, 0, err
	}
	type recv struct {
		block []byte
		err   error
	}
	// Unbuffered: the receiver takes the next block only when the
	// committer took the last, so gRPC flow control still paces the
	// orderer.
	blocks := make(chan recv)
	go func() {
		for {
			resp, err := stream.Recv()
			select {
			case blocks <- recv{resp.GetBlock(), err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	stall := time.NewTimer(f.stallAfter)
	defer stall.Stop()
	for {
		select {
		case r := <-blocks:
			if r.err == io.EOF {
				return n, 0, fmt.Errorf("node: orderer closed the block stream")
			}
			if r.err != nil {
				return n, 0, r.err
			}
			if err := f.c.Deliver(r.block); err != nil {
				return n, 0, err
			}
			if f.onBlock != nil {
				f.onBlock(r.block)
			}
			n++
			stall.Reset(f.stallAfter)
		case <-stall.C:
			if now := f.now(); !slices.Equal(now, f.orderers) {
				// A config block changed the orderer set since this
				// stream began: start again from the new set.
				return n, 0, fmt.Errorf("node: the orderer set changed while %v sent no block for %v", f.orderers[i], f.stallAfter)
			}
			next := f.c.Next()
			if j, ok := f.probe(ctx, i, next); ok {
				return n, j, fmt.Errorf("%w: no block from %v for %v, and %v has block %d", errStalled, f.orderers[i], f.stallAfter, f.orderers[j], next)
			}
			stall.Reset(f.stallAfter)
		case <-ctx.Done():
			return n, 0, ctx.Err()
		}
	}
}

// probe asks every orderer but skip, at once, for block next without
// following, and returns the first that sends it. An orderer that does
// not have it ends its stream at once; one that does not answer within
// probeTimeout counts as not having it.
func (f *follower) probe(ctx context.Context, skip int, next uint64) (int, bool) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	found := make(chan int, len(f.orderers))
	for j, o := range f.orderers {
		if j == skip {
			continue
		}
		go func() {
			stream, err := o.Deliver(ctx, &api.DeliverRequest{Channel: f.channel, Start: next, Stop: true})
			if err == nil {
				if resp, err := stream.Recv(); err == nil && len(resp.GetBlock()) > 0 {
					found <- j
					return
				}
			}
			found <- -1
		}()
	}
	for range len(f.orderers) - 1 {
		if j := <-found; j >= 0 {
			return j, true
		}
	}
	return 0, false
}
