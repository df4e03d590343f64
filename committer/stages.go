package committer

import (
	"fmt"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// verifyLoop is a stage-1 worker.
func (c *Committer) verifyLoop() {
	defer c.workers.Done()
	var batch identity.Batch
	for j := range c.jobs {
		c.runJob(j, &batch, nil)
	}
}

// runJob does one stage-1 job: a block's own checks (j.lo < 0) or its
// transactions j.lo..j.hi, with a verdict for each in vs when a compute
// node checked their signatures (remote.go).
func (c *Committer) runJob(j job, batch *identity.Batch, vs []Verdict) {
	b := j.b
	if !b.started.Load() && b.started.CompareAndSwap(false, true) {
		b.verifyStart = time.Now()
	}
	switch {
	case j.lo < 0:
		b.blockErr = verifyBlock(&c.ch, b.blk, b.headerHash)
		if b.blockErr == nil && b.blk.GetMetadata().GetSignature() != nil {
			c.metrics.sawSignature(b.blk.Header.Number)
		}
		if b.blockErr == nil && c.ch.isGenesis(b.blk) {
			b.blockErr = c.ch.checkGenesis(b.blk)
		}
	case j.hi-j.lo == 1 && vs == nil:
		b.results[j.lo] = verifyTx(&c.ch, c.rules.Load(), b.blk.Transactions[j.lo])
	default:
		verifyTxs(&c.ch, c.rules.Load(), b.blk.Transactions[j.lo:j.hi], b.results[j.lo:j.hi], batch, vs)
	}
	if b.left.Add(-1) == 0 {
		b.verified = time.Now()
		c.busy(StageVerify, b.verifyStart, b.verified)
		close(b.done) // publishes results and blockErr to stage 2
	}
}

// validateLoop is stage 2: blocks in order.
func (c *Committer) validateLoop() {
	defer c.stages.Done()
	defer close(c.persist)
	for b := range c.ordered {
		<-b.done
		if c.fatal.Load() != nil || c.stale(b) {
			c.finished(b.raw)
			continue
		}
		if b.blockErr != nil {
			c.refuse(b)
			c.finished(b.raw)
			continue
		}
		start := time.Now()
		p, err := c.validate(b)
		if err != nil {
			c.fail(err)
			c.finished(b.raw)
			continue
		}
		c.busy(StageValidate, start, p.validated)
		c.persist <- p
	}
}

func (c *Committer) stale(b *blockWork) bool {
	c.recv.Lock()
	defer c.recv.Unlock()
	return b.epoch != c.recv.epoch
}

// refuse drops block b and every block delivered after it, and rewinds
// delivery to b's number.
func (c *Committer) refuse(b *blockWork) {
	c.recv.Lock()
	c.recv.epoch++
	c.recv.next = b.blk.Header.Number
	c.recv.lastHash = b.blk.Header.PreviousHash
	c.recv.refusal = b.blockErr
	c.recv.Unlock()
	c.metrics.refused.Add(1)
	c.log.Warn("block refused", "block", b.blk.Header.Number, "reason", b.blockErr)
}

// validate decides every code of block b, applies its valid writes to the
// view, and prepares its state batch for stage 3.
func (c *Committer) validate(b *blockWork) (*persistWork, error) {
	num := b.blk.Header.Number
	if c.ch.isGenesis(b.blk) { // checked in stage 1; it writes nothing
		return &persistWork{blk: b.blk, raw: b.raw, headerHash: b.headerHash, txIDs: []string{""},
			codes: []byte{byte(api.TxValidationCode_VALID)}, received: b.received, verified: b.verified, validated: time.Now()}, nil
	}
	txs := make([]txWork, len(b.results))
	ids := make([]string, len(b.results))
	inBlock := make(map[string]struct{}, len(b.results))
	var again []*api.Tx
	if c.opts.Reparse {
		var err error
		if again, err = reparse(b.raw); err != nil {
			return nil, err
		}
	}
	rs := c.rules.Load()
	for i := range b.results {
		if b.results[i].gen != rs.gen { // verified under older definitions: see lifecycle.go
			b.results[i] = verifyTx(&c.ch, rs, b.blk.Transactions[i])
		}
		r := b.results[i]
		txs[i] = txWork{code: r.code, ver: statedb.Version{Block: num, Tx: uint32(i)}}
		if again != nil && again[i] != nil && r.tx.Response != nil {
			r.tx = again[i]
		}
		if r.tx.Response != nil {
			txs[i].rw = r.tx.Response.Rwset
		}
		ids[i] = r.tx.ID() // the block store indexes it if its final code claims it
		if !api.TxIDCounts(r.code) {
			continue
		}
		dup, err := c.seen(ids[i], inBlock)
		if err != nil {
			return nil, err
		}
		inBlock[ids[i]] = struct{}{}
		if dup {
			txs[i].code = api.TxValidationCode_DUPLICATE_TXID
		}
	}
	defs := nextDefinitions(rs.defs, b.results, txs, c.log.Warn)
	rev := nextMembers(c.ch.Registry, rs.rev, b.results, txs, c.log.Warn)
	var err error
	if c.opts.Mode == Parallel {
		err = validateParallel(c.view, txs, c.opts.ApplyWorkers)
	} else {
		err = validateSequential(c.view, txs)
	}
	if err != nil {
		return nil, fmt.Errorf("block %d: reading state: %w", num, err)
	}
	p := &persistWork{blk: b.blk, raw: b.raw, headerHash: b.headerHash, txIDs: ids, codes: make([]byte, len(txs)),
		received: b.received, verified: b.verified, defs: defs, rev: rev}
	if defs != nil || rev != nil { // in force from the next block on
		if defs == nil {
			defs = rs.defs
		}
		if rev == nil {
			rev = rs.rev
		}
		c.rules.Store(c.ch.newRuleSet(rs.gen+1, defs, rev))
	}
	c.metrics.refusedDefinitions(b.results, txs)
	c.pending.Lock()
	for i := range txs {
		p.codes[i] = byte(txs[i].code)
		if api.TxIDCounts(txs[i].code) {
			c.pending.ids[ids[i]] = struct{}{}
		}
		if txs[i].code == api.TxValidationCode_VALID {
			appendWrites(&p.batch, txs[i].rw, txs[i].ver)
		}
	}
	c.pending.Unlock()
	p.validated = time.Now()
	return p, nil
}

// seen reports whether tx id was already used: earlier in this block, in a
// block validated but not yet stored, or in the block store.
func (c *Committer) seen(id string, inBlock map[string]struct{}) (bool, error) {
	if _, ok := inBlock[id]; ok {
		return true, nil
	}
	c.pending.Lock()
	_, ok := c.pending.ids[id]
	c.pending.Unlock()
	if ok {
		return true, nil
	}
	_, ok, err := c.store.TxLocation(id)
	return ok, err
}

func appendWrites(b *statedb.Batch, rw *api.RWSet, ver statedb.Version) {
	for _, ns := range rw.Namespaces {
		for _, w := range ns.Writes {
			if w.IsDelete {
				b.Delete(ns.Namespace, w.Key, ver)
			} else {
				b.Put(ns.Namespace, w.Key, w.Value, ver)
			}
		}
	}
}

// persistLoop is stage 3: group commit.
func (c *Committer) persistLoop() {
	defer c.stages.Done()
	group := make([]*persistWork, 0, c.opts.MaxGroup)
	for p := range c.persist {
		group = append(group[:0], p)
	drain:
		for len(group) < c.opts.MaxGroup {
			select {
			case q, ok := <-c.persist:
				if !ok {
					break drain
				}
				group = append(group, q)
			default:
				break drain
			}
		}
		if c.fatal.Load() == nil {
			if err := c.commitGroup(group); err != nil {
				c.fail(err)
			}
		}
		raws := make([][]byte, len(group))
		for i, p := range group {
			raws[i] = p.raw
		}
		c.finished(raws...)
	}
}

// commitGroup makes a group of consecutive blocks durable with one fsync
// of the block store, then applies their state in one batch, then tells
// subscribers. The order is what makes recovery work: see doc.go.
func (c *Committer) commitGroup(group []*persistWork) error {
	start := time.Now()
	entries := make([]ledger.Entry, len(group))
	var batch statedb.Batch
	ends := make([]int, len(group))
	for i, p := range group {
		if c.opts.Reparse {
			if err := reparseIDs(p); err != nil {
				return err
			}
		}
		entries[i] = ledger.Entry{
			Number: p.blk.Header.Number, HeaderHash: p.headerHash, PrevHash: p.blk.Header.PreviousHash,
			Raw: api.WithValidationCodes(p.raw, p.codes), TxIDs: p.txIDs, Codes: p.codes,
		}
		batch.Writes = append(batch.Writes, p.batch.Writes...)
		ends[i] = len(batch.Writes)
	}
	appendBlocks := c.store.Append
	if c.opts.Durability == Relaxed {
		appendBlocks = c.store.AppendNoSync // flushLoop syncs
	}
	if err := appendBlocks(entries); err != nil {
		return fmt.Errorf("block store append of blocks %d-%d: %w", entries[0].Number, entries[len(entries)-1].Number, err)
	}
	stored := time.Now()
	c.pending.Lock()
	for _, p := range group {
		for i, id := range p.txIDs {
			if api.TxIDCounts(api.TxValidationCode(p.codes[i])) {
				delete(c.pending.ids, id)
			}
		}
	}
	c.pending.Unlock()
	height := entries[len(entries)-1].Number + 1
	defsChanged, membersChanged := false, false
	c.stateMu.Lock()
	err := c.retryState("state batch", func() error {
		return applyState(c.db, batch.Writes, ends, height, c.opts.SyncState)
	}, c.restoreLocked)
	if err == nil {
		c.view.prune(height)
		for _, p := range group {
			if p.defs != nil {
				c.committedDefs.Store(p.defs)
				defsChanged = true
			}
			if p.rev != nil { // the node's admission points refuse from now on
				c.ch.Registry.SetRevocations(p.rev)
				membersChanged = true
			}
		}
		c.height.Store(height)
	}
	c.stateMu.Unlock()
	if err == nil {
		c.moved.signal()
	}
	if err != nil {
		return fmt.Errorf("state batch for blocks %d-%d: %w", entries[0].Number, height-1, err)
	}
	// Members first: a definition of a later block of the group may name
	// an org this group adds.
	if f := c.onMembers.Load(); f != nil && membersChanged {
		(*f)() // before subscribers hear of the block: see OnMembers
	}
	if f := c.onDefs.Load(); f != nil && defsChanged {
		(*f)() // before subscribers hear of the block: see OnDefinitions
	}
	now := time.Now()
	c.metrics.group(group, start, stored, now)
	for _, p := range group {
		c.subs.publish(BlockEvent{
			Number: p.blk.Header.Number, TxIDs: p.txIDs, Codes: p.codes,
			Received: p.received, Verified: p.verified, Validated: p.validated, Committed: now,
		})
	}
	c.busy(StagePersist, start, time.Now())
	return nil
}

// flushLoop, in Relaxed, fsyncs the block store every FlushInterval while
// blocks were appended without it, until Close.
func (c *Committer) flushLoop() {
	defer c.flusher.Done()
	t := time.NewTicker(c.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-c.flushStop:
			return
		}
		if err := c.store.Sync(); err != nil && c.fatal.Load() == nil {
			c.fail(fmt.Errorf("block store fsync: %w", err))
		}
	}
}
