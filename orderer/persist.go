package orderer

import (
	"fmt"
	"sync"
	"time"

	"github.com/strand-ledger/strand/ledger"
)

// persist appends consecutive sealed blocks to the store, as many as are
// ready (up to maxGroup) per Append, so one fsync covers the group; then it
// wakes the deliverers.
func (o *Orderer) persist() {
	defer close(o.done)
	group := make([]ledger.Entry, 0, maxGroup)
	var carry *sealedBlock // a catch-up order that ended the last group
	for {
		var first sealedBlock
		if carry != nil {
			first, carry = *carry, nil
		} else if s, ok := <-o.sealed; ok {
			first = s
		} else {
			break
		}
		if first.sync != nil {
			o.catchUp(*first.sync)
			continue
		}
		group = append(group[:0], first.entry)
		txs, txBytes := len(first.entry.TxIDs), first.txBytes
	fill:
		for len(group) < maxGroup {
			select {
			case s, ok := <-o.sealed:
				if !ok {
					break fill
				}
				if s.sync != nil {
					carry = &s
					break fill
				}
				group = append(group, s.entry)
				txs += len(s.entry.TxIDs)
				txBytes += s.txBytes
			default:
				break fill
			}
		}
		if o.fatal.Load() != nil {
			o.sealReleased(len(group))
			continue
		}
		start := time.Now()
		// A Raft member skips the fsync: its log, fsynced on a majority
		// before any of these blocks was applied, determines them, and
		// after a machine crash the log's entries above the store's
		// height are applied again (raftNode.startState). maybeSnapshot
		// syncs before the log may forget them.
		appendBlocks := o.cfg.Store.Append
		if o.raft != nil {
			appendBlocks = o.cfg.Store.AppendNoSync
		}
		if err := appendBlocks(group); err != nil {
			o.fail(fmt.Errorf("%w: appending blocks %d..%d: %w", ErrFailed, group[0].Number, group[len(group)-1].Number, err))
			o.sealReleased(len(group))
			continue
		}
		o.m.persisted(len(group), txs, txBytes, time.Since(start))
		o.applyMembers(group) // before deliverers hear of the blocks
		o.sealReleased(len(group))
		o.notify.broadcast()
	}
	o.notify.broadcast()
	o.cfg.Log.Info("orderer stopped", "channel", o.cfg.Channel, "height", o.cfg.Store.Height())
}

// fail records the first fatal error; the orderer then refuses new
// transactions and drops what it has not stored.
func (o *Orderer) fail(err error) {
	if o.fatal.CompareAndSwap(nil, &err) {
		o.cfg.Log.Error("orderer failed; restart it to continue from the block store", "channel", o.cfg.Channel, "err", err)
	}
}

// notifier wakes every waiting deliverer when blocks are stored: wait
// returns a channel that is closed at the next broadcast.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

func (n *notifier) broadcast() {
	n.mu.Lock()
	close(n.ch)
	n.ch = make(chan struct{})
	n.mu.Unlock()
}
