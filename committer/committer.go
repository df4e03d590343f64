package committer

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// Errors returned by the committer; test with errors.Is.
var (
	ErrBlockRefused = errors.New("committer: block refused")
	ErrOutOfOrder   = errors.New("committer: block out of order")
	ErrClosed       = errors.New("committer: closed")
	ErrFailed       = errors.New("committer: failed")
)

// Committer is a validating peer's pipeline for one channel.
type Committer struct {
	ch Channel
	// rules is the current generation (lifecycle.go): stage 1 loads it,
	// stage 2 alone stores it.
	rules atomic.Pointer[ruleSet]
	// committedDefs is the definitions in force at the committed height.
	committedDefs atomic.Pointer[lifecycle.Table]
	onDefs        atomic.Pointer[func()] // OnDefinitions
	onMembers     atomic.Pointer[func()] // OnMembers
	opts          Options
	store         *ledger.BlockStore
	db            statedb.DB
	view          *view
	log           *slog.Logger

	jobs chan job // stage 1 work, any order
	// remoteJobs is stage 1's transaction work while a compute node is
	// attached, remoteDone closed when no more will come (remote.go).
	remoteJobs chan job
	remoteDone chan struct{}
	remote     remotes           // compute nodes stage 1 asks
	ordered    chan *blockWork   // blocks in order, into stage 2
	persist    chan *persistWork // validated blocks, into stage 3
	deliver    sync.Mutex        // serialises Deliver's sends
	stopping   chan struct{}     // closed when Close starts: retries give up

	// stateMu orders stage 3's state batches and restores (statewait.go).
	stateMu     sync.Mutex
	restoreKick chan struct{} // buffered 1: an endorser found the state lost
	restorer    sync.WaitGroup
	// Relaxed only: flushLoop runs until flushStop is closed.
	flusher   sync.WaitGroup
	flushStop chan struct{}

	recv struct {
		sync.Mutex
		next     uint64 // number the next delivered block must carry
		lastHash []byte // header hash of the last accepted block
		epoch    uint64 // bumped on every refusal; older blocks are dropped
		refusal  error  // returned by Deliver until delivery resumes at next
		closed   bool
	}
	pending struct { // tx ids of blocks validated but not yet in the store
		sync.Mutex
		ids map[string]struct{}
	}
	progress struct { // for Sync and the byte window
		sync.Mutex
		cond      *sync.Cond
		delivered uint64
		finished  uint64
		bytes     int // delivered, not yet finished
	}
	fatal  atomic.Pointer[error]
	height atomic.Uint64 // blocks durably committed
	moved  heightSignal  // wakes WaitHeight when height moves

	subs    subscribers
	metrics metrics
	stages  sync.WaitGroup
	workers sync.WaitGroup
}

type job struct {
	b *blockWork
	// lo, hi: the transactions [lo, hi) of b, checked as one batch
	// (Options.VerifyBatch); -1, -1 for the block-level check.
	lo, hi int
}

// blockWork is a block moving through stages 1 and 2.
type blockWork struct {
	blk        *api.Block
	raw        []byte // as delivered; blk's transactions alias it
	headerHash []byte
	epoch      uint64
	received   time.Time
	results    []txResult
	per        int // transactions per stage-1 job (batchSize)
	blockErr   error
	left       atomic.Int32 // stage-1 jobs not yet done
	// started is claimed by the first stage-1 job to run, which then
	// stamps verifyStart; the job that brings left to 0 reads it (the
	// atomics order the stamp before the read).
	started     atomic.Bool
	verifyStart time.Time
	done        chan struct{}
	verified    time.Time
}

// persistWork is a validated block on its way into stage 3.
type persistWork struct {
	blk        *api.Block
	raw        []byte
	headerHash []byte
	txIDs      []string
	codes      []byte
	batch      statedb.Batch
	defs       *lifecycle.Table      // the definitions after this block, if it changed them
	rev        *identity.Revocations // the revocation lists after this block, if it changed them
	received   time.Time
	verified   time.Time
	validated  time.Time
}

// New starts a committer over an open block store and state database. It
// first brings the state up to the block store (recovery), then accepts
// blocks from store.Height() on.
func New(ch Channel, store *ledger.BlockStore, db statedb.DB, opts Options, log *slog.Logger) (*Committer, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := ch.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Committer{
		ch: ch, opts: opts, store: store, db: db, view: newView(db, max(opts.StateCacheBytes, 0)), log: log,
		jobs:        make(chan job, opts.Window*4),
		remoteJobs:  make(chan job, opts.Window*4),
		remoteDone:  make(chan struct{}),
		ordered:     make(chan *blockWork, opts.Window),
		persist:     make(chan *persistWork, opts.Window),
		stopping:    make(chan struct{}),
		restoreKick: make(chan struct{}, 1),
	}
	c.view.checkDB = c.patient(db)
	c.view.db = noticingDB{DB: db, c: c}
	c.pending.ids = make(map[string]struct{})
	c.progress.cond = sync.NewCond(&c.progress.Mutex)
	if err := c.recover(); err != nil {
		return nil, err
	}
	rs, err := ch.loadRules(db)
	if err != nil {
		return nil, err
	}
	c.rules.Store(rs)
	c.committedDefs.Store(rs.defs)
	ch.Registry.SetRevocations(rs.rev)
	c.recv.next = store.Height()
	c.recv.lastHash = store.LastHash()
	c.height.Store(store.Height())
	for i := 0; i < opts.VerifyWorkers; i++ {
		c.workers.Add(1)
		go c.verifyLoop()
	}
	c.restorer.Add(1)
	go c.restoreLoop()
	c.stages.Add(2)
	go c.validateLoop()
	go c.persistLoop()
	if opts.Durability == Relaxed {
		c.flushStop = make(chan struct{})
		c.flusher.Add(1)
		go c.flushLoop()
	}
	return c, nil
}

// Height returns the number of blocks durably committed.
func (c *Committer) Height() uint64 { return c.height.Load() }

// Next returns the number of the block Deliver expects next: where a
// block source must resume (after a refusal, the refused block's number).
func (c *Committer) Next() uint64 {
	c.recv.Lock()
	defer c.recv.Unlock()
	return c.recv.next
}

// Deliver hands the committer the next block's bytes, which it keeps: the
// caller must not modify raw afterwards. It checks, in order,
// that the block decodes, carries the next number and continues the hash
// chain, then queues it and returns; the rest happens in the pipeline. It
// blocks while Options.Window blocks are in flight. After a block has been
// refused in the pipeline, every call returns that refusal until delivery
// resumes at the refused block's number.
func (c *Committer) Deliver(raw []byte) error {
	if errp := c.fatal.Load(); errp != nil {
		return *errp
	}
	received := time.Now()
	blk, err := api.DecodeBlock(raw)
	if err != nil {
		return fmt.Errorf("%w: %d bytes do not decode as a block: %v", ErrBlockRefused, len(raw), err)
	}
	if blk.Header == nil {
		return fmt.Errorf("%w: block has no header", ErrBlockRefused)
	}
	c.deliver.Lock()
	defer c.deliver.Unlock()
	b, err := c.accept(blk, raw, received)
	if err != nil {
		return err
	}
	c.busy(StageReceive, received, time.Now())
	if err := c.admit(len(raw)); err != nil {
		return err
	}
	c.ordered <- b
	if !c.ch.isGenesis(blk) { // the genesis document is checked whole, in the block job
		c.queueTxJobs(b)
	}
	c.jobs <- job{b, -1, -1}
	return nil
}

// batchSize is how many of a block's n transactions one stage-1 job
// checks: Options.VerifyBatch, or when it is 0, one batch per worker on a
// channel with Ed25519 members and one transaction a job otherwise (a
// P-256 signature gains nothing from a batch, and single jobs balance
// the workers best).
func (c *Committer) batchSize(n int) int {
	per := c.opts.VerifyBatch
	if per == 0 {
		per = 1
		if c.ch.Registry.UsesEd25519() {
			per = (n + c.opts.VerifyWorkers - 1) / c.opts.VerifyWorkers
		}
	}
	return max(per, 1)
}

// accept checks a block's place in the chain and claims it.
func (c *Committer) accept(blk *api.Block, raw []byte, received time.Time) (*blockWork, error) {
	c.recv.Lock()
	defer c.recv.Unlock()
	if c.recv.closed {
		return nil, ErrClosed
	}
	n := blk.Header.Number
	if err := c.recv.refusal; err != nil {
		if n != c.recv.next {
			return nil, fmt.Errorf("%w (resume delivery at block %d)", err, c.recv.next)
		}
		c.recv.refusal = nil
	}
	if n != c.recv.next {
		return nil, fmt.Errorf("%w: got block %d, want block %d", ErrOutOfOrder, n, c.recv.next)
	}
	prev := blk.Header.PreviousHash
	if !bytes.Equal(prev, c.recv.lastHash) && !(n == 0 && isZero(prev)) {
		return nil, fmt.Errorf("%w: block %d: previous hash %.8x does not match block %d's header hash %.8x",
			ErrBlockRefused, n, prev, n-1, c.recv.lastHash)
	}
	hh := api.HeaderHash(blk.Header)
	c.recv.next, c.recv.lastHash = n+1, hh
	b := &blockWork{
		blk: blk, raw: raw, headerHash: hh, epoch: c.recv.epoch, received: received,
		results: make([]txResult, len(blk.Transactions)), done: make(chan struct{}),
	}
	if c.ch.isGenesis(blk) {
		b.left.Store(1)
	} else {
		b.per = c.batchSize(len(blk.Transactions))
		b.left.Store(int32((len(blk.Transactions)+b.per-1)/b.per + 1))
	}
	return b, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Sync waits until every block delivered before the call has been
// committed or dropped, and returns the committer's fatal error, if any.
func (c *Committer) Sync() error {
	c.progress.Lock()
	target := c.progress.delivered
	for c.progress.finished < target && c.fatal.Load() == nil {
		c.progress.cond.Wait()
	}
	c.progress.Unlock()
	if errp := c.fatal.Load(); errp != nil {
		return *errp
	}
	return nil
}

// admit waits for room in the byte window and counts the block delivered.
func (c *Committer) admit(size int) error {
	c.progress.Lock()
	defer c.progress.Unlock()
	for c.progress.bytes > 0 && c.progress.bytes+size > c.opts.WindowBytes {
		if errp := c.fatal.Load(); errp != nil {
			return *errp
		}
		c.progress.cond.Wait()
	}
	c.progress.delivered++
	c.progress.bytes += size
	return nil
}

// finished counts blocks that left the pipeline (committed or dropped)
// and frees their room in the window.
func (c *Committer) finished(raws ...[]byte) {
	c.progress.Lock()
	c.progress.finished += uint64(len(raws))
	for _, r := range raws {
		c.progress.bytes -= len(r)
	}
	c.progress.Unlock()
	c.progress.cond.Broadcast()
}

// fail records a fatal error: the pipeline can no longer keep its
// invariants (the block store or the state database failed).
func (c *Committer) fail(err error) {
	err = fmt.Errorf("%w: %w", ErrFailed, err)
	if c.fatal.CompareAndSwap(nil, &err) {
		c.log.Error("committer stopped", "err", err)
	}
	c.progress.cond.Broadcast()
}

// Close stops the pipeline after the blocks already delivered are
// committed. It does not close the block store or the state database.
func (c *Committer) Close() error {
	c.deliver.Lock()
	c.recv.Lock()
	if c.recv.closed {
		c.recv.Unlock()
		c.deliver.Unlock()
		return ErrClosed
	}
	c.recv.closed = true
	c.recv.Unlock()
	close(c.stopping)
	close(c.ordered)
	c.deliver.Unlock()
	c.stages.Wait()
	c.restorer.Wait()
	close(c.jobs)
	c.workers.Wait()
	c.closeRemotes()
	if c.flushStop != nil {
		close(c.flushStop)
		c.flusher.Wait()
		if err := c.store.Sync(); err != nil && c.fatal.Load() == nil {
			c.fail(fmt.Errorf("block store fsync at close: %w", err))
		}
	}
	c.subs.closeAll()
	if errp := c.fatal.Load(); errp != nil {
		return *errp
	}
	return nil
}
