package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/strand-ledger/strand/api"
)

// reportFresh is how long after its last submit a gateway keeps telling
// the orderer its peer's height after each commit: the orderer counts a
// report for 100 ms (cut.PaceFresh), so later ones would not matter.
const reportFresh = 100 * time.Millisecond

// reportTimeout bounds one height report.
const reportTimeout = time.Second

// heightReporter tells the orderer its peer's committed height after each
// block the peer commits, while the gateway submits (Config.ReportHeights).
// A stream-mode orderer holds its next block while a peer is behind (see
// "Pacing by the peers" in orderer's doc.go); the heights that ride on
// submits alone come too late to end a hold, since under a closed-loop
// load the next submits wait for the commits the hold is waiting for, so
// without these reports a hold ran to its limit (then 5 ms) nine times
// in ten.
//
// Reports are advisory, unsigned and coalesced: at most one is in flight,
// and the next carries the latest height. A failed report is dropped (the
// next commit sends another).
type heightReporter struct {
	g  *Gateway
	mu struct {
		sync.Mutex
		lastSubmit time.Time
		pending    uint64 // height not yet reported; 0 if none
		last       uint64 // the highest height taken for a report
		sending    bool   // a send loop runs
	}
}

// submitted records that the gateway just submitted a transaction.
func (r *heightReporter) submitted(now time.Time) {
	r.mu.Lock()
	r.mu.lastSubmit = now
	r.mu.Unlock()
}

// committed records that the peer reached height; it starts a send loop
// if the gateway submitted within reportFresh and none runs.
func (r *heightReporter) committed(height uint64, now time.Time) {
	if !r.g.cfg.ReportHeights {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.mu.lastSubmit) > reportFresh || height <= r.mu.last {
		return
	}
	r.mu.pending, r.mu.last = height, height
	if !r.mu.sending {
		r.mu.sending = true
		go r.send()
	}
}

// send reports the pending height to the preferred orderer until none is
// pending.
func (r *heightReporter) send() {
	for {
		r.mu.Lock()
		h := r.mu.pending
		r.mu.pending = 0
		if h == 0 {
			r.mu.sending = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		orderers := r.g.cfg.Orderers
		if r.g.cfg.OrderersNow != nil {
			orderers = r.g.cfg.OrderersNow()
		}
		if len(orderers) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
		// An empty batch carries the report alone; the embedded client is
		// the orderer connection itself, so it does not wait for a batch.
		_, err := orderers[0].SubmitBatch(ctx, &api.SubmitBatchRequest{Peer: r.g.cfg.Peer, PeerHeight: h, Channel: r.g.cfg.Channel})
		cancel()
		if err == nil {
			r.g.metrics.heightReports.Add(1)
		}
	}
}
