package endorser

import (
	"context"
	"fmt"
	"time"

	"github.com/strand-ledger/strand/api"
)

// CatchUpWait bounds how long a proposal waits for the endorser's state
// to reach its MinHeight, and CatchUpStall how long the state may stand
// still meanwhile. A peer that follows the orderers, or a compute node
// that follows its memory node, is a few milliseconds behind its
// gateway's peer and moving; one whose state stands still is
// reconnecting or recovering, and is refused soon, so that the gateway
// asks another peer of the org or waits itself.
const (
	CatchUpWait  = time.Second
	CatchUpStall = 100 * time.Millisecond
)

// catchUpPoll is how often Height is asked while waiting without Synced.
const catchUpPoll = time.Millisecond

// atLeast returns height, the state's height as read before, if it
// meets sp's MinHeight, else the height once the state has caught up
// (catchUp). Callers call it after admission: a proposal that is not a
// member's holds no goroutine here. It needs Config.Height.
func (e *Endorser) atLeast(ctx context.Context, sp *api.SignedProposal, p *api.Proposal, height uint64) (uint64, error) {
	if want := sp.GetMinHeight(); want > height {
		return e.catchUp(ctx, p.GetHeader().GetTxId(), want)
	}
	return height, nil
}

// catchUp waits until the state holds want blocks, while it moves (see
// CatchUpWait), and returns the height then: a lower bound of the state
// the simulation reads.
func (e *Endorser) catchUp(ctx context.Context, txID string, want uint64) (uint64, error) {
	e.metrics.caughtUp.Add(1)
	start := time.Now()
	h := e.height()
	for h < want && ctx.Err() == nil && time.Since(start) < CatchUpWait {
		wctx, cancel := context.WithTimeout(ctx, min(CatchUpStall, CatchUpWait-time.Since(start)))
		e.await(wctx, want)
		cancel()
		was := h
		if h = e.height(); h == was {
			break // stood still for CatchUpStall
		}
	}
	if h < want {
		return h, refuse(ErrBehind, nil, fmt.Sprintf("tx %s needs state of at least %d blocks (its min height: what the gateway's peer had committed), "+
			"this endorser's state holds %d after waiting %v; try again, or ask another peer", txID, want, h, time.Since(start).Round(time.Millisecond)))
	}
	return h, nil
}

// await returns once the state holds want blocks or ctx ends.
func (e *Endorser) await(ctx context.Context, want uint64) {
	if e.synced != nil {
		_ = e.synced(ctx, want) // the height tells
		return
	}
	t := time.NewTicker(catchUpPoll)
	defer t.Stop()
	for e.height() < want {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
