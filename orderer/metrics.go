package orderer

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Metrics is a snapshot of the orderer's activity since New.
type Metrics struct {
	Submitted uint64 // Submit calls
	Admitted  uint64 // transactions queued for ordering
	Refused   Refused
	Queued    int    // admitted transactions waiting to be cut now
	Height    uint64 // blocks in the store
	Blocks    uint64 // blocks persisted since New
	Txs       uint64 // transactions in them
	TxBytes   uint64 // transaction bytes in them
	Appends   uint64 // Append calls: one fsync of the group each
	// Fsyncs counts the block store's segment fsyncs since it was opened
	// (Appends plus segment roll-overs).
	Fsyncs      uint64
	AppendTotal time.Duration // time spent in Append
	Delivered   uint64        // blocks sent by Deliver
}

// Refused counts refused Submit calls by reason.
type Refused struct {
	Malformed    uint64 // 400
	WrongChannel uint64 // 404
	Forbidden    uint64 // 403: unknown org, bad certificate, wrong role, expired, bad signature
	Overloaded   uint64 // 429
	Closed       uint64 // 503: closed or failed
	Context      uint64 // the caller's context was done
}

// Total returns the number of refusals.
func (r Refused) Total() uint64 {
	return r.Malformed + r.WrongChannel + r.Forbidden + r.Overloaded + r.Closed + r.Context
}

// AvgBlockTxs returns the mean transactions per block (0 if none).
func (m Metrics) AvgBlockTxs() float64 {
	if m.Blocks == 0 {
		return 0
	}
	return float64(m.Txs) / float64(m.Blocks)
}

// BlocksPerAppend returns the mean group size: blocks per fsync (0 if none).
func (m Metrics) BlocksPerAppend() float64 {
	if m.Appends == 0 {
		return 0
	}
	return float64(m.Blocks) / float64(m.Appends)
}

// String renders the metrics on one line.
func (m Metrics) String() string {
	var avgAppend time.Duration
	var avgBytes uint64
	if m.Appends > 0 {
		avgAppend = m.AppendTotal / time.Duration(m.Appends)
	}
	if m.Blocks > 0 {
		avgBytes = m.TxBytes / m.Blocks
	}
	r := m.Refused
	return fmt.Sprintf("submitted %d, admitted %d, refused %d (malformed %d, wrong channel %d, forbidden %d, overloaded %d, closed %d, context %d); "+
		"queued %d; height %d; %d blocks of %d txs (avg %.1f txs, %d B); %d appends (%.1f blocks each, avg %s), %d fsyncs; %d blocks delivered",
		m.Submitted, m.Admitted, r.Total(), r.Malformed, r.WrongChannel, r.Forbidden, r.Overloaded, r.Closed, r.Context,
		m.Queued, m.Height, m.Blocks, m.Txs, m.AvgBlockTxs(), avgBytes, m.Appends, m.BlocksPerAppend(), avgAppend, m.Fsyncs, m.Delivered)
}

// counters are the live metrics.
type counters struct {
	submitted, admitted                                atomic.Uint64
	refusedMalformed, refusedChannel, refusedForbidden atomic.Uint64
	refusedOverloaded, refusedClosed, refusedCtx       atomic.Uint64
	blocks, txs, txBytes, appends, delivered           atomic.Uint64
	appendNanos                                        atomic.Int64
}

func (c *counters) persisted(blocks, txs, txBytes int, took time.Duration) {
	c.blocks.Add(uint64(blocks))
	c.txs.Add(uint64(txs))
	c.txBytes.Add(uint64(txBytes))
	c.appends.Add(1)
	c.appendNanos.Add(int64(took))
}

// Metrics returns a snapshot of the orderer's metrics.
func (o *Orderer) Metrics() Metrics {
	c := &o.m
	return Metrics{
		Submitted: c.submitted.Load(),
		Admitted:  c.admitted.Load(),
		Refused: Refused{
			Malformed: c.refusedMalformed.Load(), WrongChannel: c.refusedChannel.Load(), Forbidden: c.refusedForbidden.Load(),
			Overloaded: c.refusedOverloaded.Load(), Closed: c.refusedClosed.Load(), Context: c.refusedCtx.Load(),
		},
		Queued:      len(o.in),
		Height:      o.cfg.Store.Height(),
		Blocks:      c.blocks.Load(),
		Txs:         c.txs.Load(),
		TxBytes:     c.txBytes.Load(),
		Appends:     c.appends.Load(),
		Fsyncs:      o.cfg.Store.Stats().Fsyncs,
		AppendTotal: time.Duration(c.appendNanos.Load()),
		Delivered:   c.delivered.Load(),
	}
}
