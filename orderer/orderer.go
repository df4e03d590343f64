package orderer

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/orderer/cut"
)

// DefaultQueue is the default bound of Config.Queue.
const DefaultQueue = 10000

// DefaultQueueBytes is the default bound of Config.QueueBytes: sixteen
// transactions of api.MaxTxBytes, or 10,000 of 6.5 KiB.
const DefaultQueueBytes = 64 << 20

// Pipeline depths between the stages (see doc.go).
const (
	cutDepth    = 16 // cut batches waiting to be sealed
	sealedDepth = 64 // sealed blocks waiting to be persisted
	maxGroup    = 64 // blocks per Append (one fsync)
)

// Config configures an Orderer.
type Config struct {
	// Channel is the one channel this orderer orders; every transaction's
	// header must name it.
	Channel string
	// Registry validates transaction creators and the Signer.
	Registry *identity.Registry
	// Readers is the channel's read policy: a Deliver caller whose TLS
	// certificate is not of a peer or orderer of the channel must satisfy
	// it (see Orderer.AuthorizeRead). The zero value checks no caller: an
	// orderer served without TLS, in a test.
	Readers caller.Readers
	// Format is the channel's transaction format (zero means api.Format2):
	// admission refuses a transaction whose endorsed response was made
	// for another transaction (api.Format.CheckBinding), before any
	// signature check.
	Format api.Format
	// Signer signs the blocks (every one, or the checkpoints). It must
	// have role orderer and be a member the Registry accepts, so that
	// peers can verify the blocks.
	Signer *identity.Signer
	// Batch says when blocks are cut; zero fields take their defaults.
	Batch cut.Config
	// Checkpoints says which blocks are signed; the zero value signs every
	// one. The channel's peers must be configured to match
	// (committer.Channel.Checkpoints).
	Checkpoints Checkpoints
	// Store is the durable log. Blocks are appended (and fsynced) here
	// before anyone sees them. The caller opens and closes it; the orderer
	// must be its only appender.
	Store *ledger.BlockStore
	// Queue bounds the admitted transactions waiting to be cut; beyond it
	// Submit returns ErrOverloaded. Default DefaultQueue (10,000).
	Queue int
	// QueueBytes bounds the bytes of those transactions the same way:
	// the count alone would let 10,000 transactions of api.MaxTxBytes
	// (40 GiB) wait. Default DefaultQueueBytes (64 MiB); at least
	// api.MaxTxBytes, so that any admissible transaction fits.
	QueueBytes int
	// Log receives start, stop and failure messages; nil discards them.
	Log *slog.Logger
	// Clock is the time against which creator certificates expire.
	// Default time.Now.
	Clock func() time.Time
	// Genesis, if set, is the channel's genesis document: on an empty
	// store the orderer writes it as block 0, on a non-empty one it checks
	// that block 0 holds exactly it.
	Genesis []byte
	// Raft, if set, makes this orderer a member of a Raft cluster (see
	// "Raft" in the package documentation); nil is the single-node
	// orderer. Every member must have the same Genesis and Batch.
	Raft *RaftConfig
}

// EnsureDefaults fills in zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	c.Batch.EnsureDefaults()
	if c.Queue == 0 {
		c.Queue = DefaultQueue
	}
	if c.QueueBytes == 0 {
		c.QueueBytes = DefaultQueueBytes
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
}

// Validate reports the first invalid field, naming its value and what is
// allowed.
func (c *Config) Validate() error {
	switch {
	case c.Channel == "":
		return fmt.Errorf("%w: Config.Channel is empty, want the channel's name", ErrBadConfig)
	case c.Registry == nil:
		return fmt.Errorf("%w: Config.Registry is nil, want the channel's identity registry", ErrBadConfig)
	case c.Signer == nil:
		return fmt.Errorf("%w: Config.Signer is nil, want an orderer-role signer", ErrBadConfig)
	case c.Store == nil:
		return fmt.Errorf("%w: Config.Store is nil, want an open block store", ErrBadConfig)
	case !c.Format.Valid():
		return fmt.Errorf("%w: Config.Format is %d, want 1 or 2 (0 means 2)", ErrBadConfig, int(c.Format))
	case c.Queue < 1:
		return fmt.Errorf("%w: Config.Queue is %d, want at least 1 (0 means the default, %d)", ErrBadConfig, c.Queue, DefaultQueue)
	case c.QueueBytes < api.MaxTxBytes:
		return fmt.Errorf("%w: Config.QueueBytes is %d, want at least %d (api.MaxTxBytes, so that any admissible transaction fits; 0 means the default, %d)",
			ErrBadConfig, c.QueueBytes, api.MaxTxBytes, DefaultQueueBytes)
	}
	if r := c.Signer.Role(); r != identity.RoleOrderer {
		return fmt.Errorf("%w: Config.Signer %q of org %q has role %s, want orderer", ErrBadConfig, c.Signer.Name(), c.Signer.Org(), r)
	}
	m, err := c.Registry.Member(c.Signer.Identity())
	if err != nil {
		return fmt.Errorf("%w: Config.Signer %q is not valid in the registry, so peers could not verify its blocks: %w",
			ErrBadConfig, c.Signer.Name(), err)
	}
	if m.Role != identity.RoleOrderer {
		return fmt.Errorf("%w: Config.Signer %q: registry says role %s, want orderer", ErrBadConfig, c.Signer.Name(), m.Role)
	}
	if err := c.Checkpoints.Validate(); err != nil {
		return err
	}
	if err := c.Batch.Validate(); err != nil {
		return fmt.Errorf("%w: Config.Batch: %w", ErrBadConfig, err)
	}
	return nil
}

// Orderer admits transactions, cuts them into blocks, signs, persists and
// delivers the blocks of one channel. See the package documentation.
type Orderer struct {
	cfg     Config
	members membersScan  // membership updates applied (members.go)
	ckpt    checkpointer // owned by seal

	in chan admitted // Submit → loop, bounded by Config.Queue
	// inBytes is the bytes of the transactions in in, bounded by
	// Config.QueueBytes: enqueue adds before it sends, the loop
	// subtracts when it receives.
	inBytes atomic.Int64
	cuts    chan batch       // loop → seal
	sealed  chan sealedBlock // seal → persist

	// Stream mode only (see "Stream mode" in doc.go): inSeal counts the
	// batches the loop has sent downstream whose blocks are not yet
	// durable; the loop increments it, persist decrements it after the
	// block store's fsync and, on reaching zero, wakes the loop through
	// idle (capacity 1, so a wake-up is never lost and persist never
	// blocks on it). idle is nil in block mode.
	inSeal atomic.Int64
	idle   chan struct{}
	// pace holds the peers' reported heights (stream mode, single node);
	// holding is set while the loop holds a cut for them, so that a
	// report then wakes it through idle.
	pace        cut.Pacer
	holding     atomic.Bool
	paceMaxHold time.Duration // cut.PaceMaxHold; tests lengthen it
	// sealHook, if set (tests only), runs in seal before each batch.
	sealHook func()

	stop      chan struct{} // closed by Close: loop flushes and exits
	done      chan struct{} // closed when persist has exited
	closeOnce sync.Once

	// mu guards closed. Submit holds it shared while it enqueues, so that
	// once Close has set closed no transaction can slip in behind the
	// loop's final drain.
	mu struct {
		sync.RWMutex
		closed bool
	}

	fatal atomic.Pointer[error] // first storage failure, sticky
	// removed is set (ErrRemoved) when a config update removed this Raft
	// member: Submit refuses, the pipeline stores what was applied.
	removed atomic.Pointer[error]
	notify  notifier
	m       counters
	// raft is the Raft side of a cluster member; nil for a single node.
	raft *raftNode
}

// admitted is a transaction that passed admission, kept with its tx id.
type admitted struct {
	raw    []byte
	id     string
	config bool // a config update (api.IsConfigEnvelope)
}

// batch is a cut block's transactions and their tx ids. In Raft mode,
// batches that reach seal also carry the block number the applied log
// gave them (seal checks it against its own count), or are a catch-up
// order (sync) instead of a block.
type batch struct {
	// Batch: the transactions; Config when the loop cut a config update
	// alone (Raft: proposed as a ConfChange, see confchange.go).
	cut.Batch
	num  uint64
	sync *snapState
}

// sealedBlock is a signed, encoded block ready to persist, or a catch-up
// order (sync) that persist carries out in order with the blocks.
type sealedBlock struct {
	entry   ledger.Entry
	txBytes int
	sync    *snapState
}

// New starts an orderer that continues the chain in cfg.Store: the next
// block is number Store.Height() and links to Store.LastHash().
func New(cfg Config) (*Orderer, error) {
	o, err := newOrderer(cfg)
	if err != nil {
		return nil, err
	}
	if err := o.genesis(); err != nil {
		o.closeRaft()
		return nil, err
	}
	o.catchUpMembers()
	if err := o.start(); err != nil {
		o.closeRaft()
		return nil, err
	}
	return o, nil
}

// newOrderer builds an orderer without starting its goroutines (tests use
// it to hold the pipeline still).
func newOrderer(cfg Config) (*Orderer, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &Orderer{
		cfg:    cfg,
		ckpt:   checkpointer{cfg: cfg.Checkpoints},
		in:     make(chan admitted, cfg.Queue),
		cuts:   make(chan batch, cutDepth),
		sealed: make(chan sealedBlock, sealedDepth),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),

		paceMaxHold: cut.PaceMaxHold,
	}
	if cfg.Batch.Mode == cut.ModeStream {
		o.idle = make(chan struct{}, 1)
	}
	o.notify.ch = make(chan struct{})
	if cfg.Raft != nil {
		r, err := newRaftNode(o, *cfg.Raft)
		if err != nil {
			return nil, err
		}
		o.raft = r
	}
	return o, nil
}

func (o *Orderer) start() error {
	h, last := o.cfg.Store.Height(), o.cfg.Store.LastHash()
	var behind *snapState
	if o.raft != nil {
		var err error
		if behind, err = o.raft.startState(); err != nil {
			return err
		}
	}
	o.cfg.Log.Info("orderer started", "channel", o.cfg.Channel, "height", h, "mode", o.cfg.Batch.Mode,
		"max_txs", o.cfg.Batch.MaxTxs, "max_bytes", o.cfg.Batch.MaxBytes, "timeout", o.cfg.Batch.Timeout, "queue", o.cfg.Queue,
		"checkpoint_blocks", o.cfg.Checkpoints.Blocks, "checkpoint_interval", o.cfg.Checkpoints.Interval,
		"raft", o.raft != nil)
	go o.loop()
	go o.seal(h, last)
	go o.persist()
	if o.raft != nil {
		o.raft.tr.start()
		go o.raft.run(behind)
		if len(o.cfg.Store.Damaged()) > 0 {
			go o.repairDamaged()
		}
	}
	return nil
}

// closeRaft releases the Raft log and connections of an orderer that
// failed to start.
func (o *Orderer) closeRaft() {
	if o.raft != nil {
		o.raft.tr.close()
		o.raft.log.Close()
	}
}

// Height returns the number of blocks stored (and deliverable).
func (o *Orderer) Height() uint64 { return o.cfg.Store.Height() }

// Close stops admitting, cuts and persists every admitted transaction,
// then stops. It returns the storage failure, if any. It does not close
// the Store. Later calls return the same result.
func (o *Orderer) Close() error {
	o.closeOnce.Do(func() {
		o.mu.Lock()
		o.mu.closed = true
		o.mu.Unlock()
		close(o.stop)
	})
	<-o.done
	if e := o.fatal.Load(); e != nil {
		return *e
	}
	return nil
}

// loop is the ordered path's I/O side: it feeds the decision core
// (cut.Flow: the cutter, config updates alone, pacing) with admitted
// transactions, timer ticks and seal's idle signals, keeps the core's
// contract (see cut.Flow) and hands cut batches on, to seal or, in Raft
// mode, to the Raft loop. It reads the clock; it never decides, hashes,
// signs or writes.
func (o *Orderer) loop() {
	if o.raft == nil {
		defer close(o.cuts)
	} else {
		defer close(o.raft.props) // run then stops, and closes cuts
	}
	var pacer *cut.Pacer // pacing: stream mode, single node
	if o.raft == nil {
		pacer = &o.pace
	}
	f := cut.NewFlow(o.cfg.Batch, pacer, o.paceMaxHold)
	var wake wakeTimer
	defer wake.stop()
	take := func(a admitted) {
		o.inBytes.Add(-int64(len(a.raw)))
		o.emit(f.Add(a.raw, a.id, a.config, time.Now()))
	}
	for {
		select {
		case a := <-o.in:
			take(a)
		case <-wake.c():
			wake.fired()
			o.emit(f.Tick(time.Now()))
		case <-o.idle: // nil in block mode; Idle below acts on it
		case <-o.stop:
			for drained := false; !drained; {
				select {
				case a := <-o.in:
					take(a)
				default:
					drained = true
				}
			}
			o.emit(f.Flush())
			return
		}
		// Stream mode: whenever seal has nothing in hand, what is pending
		// goes now (unless pacing holds it). A batch cut here never waits
		// behind another, so while seal works the next batch grows in the
		// cutter, not in o.cuts. With nothing in flight, every block cut
		// is in the store.
		if o.idle != nil && o.inSeal.Load() == 0 {
			out, ev := f.Idle(time.Now(), o.cfg.Store.Height())
			if ev&cut.PaceHeld != 0 {
				o.m.paced.Add(1)
			}
			if ev&cut.PaceLimit != 0 {
				o.m.pacedToLimit.Add(1)
			}
			o.emit(out)
			o.holding.Store(f.Holding())
		}
		wake.set(f.Deadline())
	}
}

// emit hands cut batches on in order: to seal, or in Raft mode to the
// Raft loop, whose leader proposes them. Stream mode counts them in
// flight until they are durable (released).
func (o *Orderer) emit(bs []cut.Batch) {
	for _, cb := range bs {
		if o.idle != nil {
			o.inSeal.Add(1)
		}
		b := batch{Batch: cb}
		if o.raft == nil {
			o.cuts <- b
			continue
		}
		select {
		case o.raft.props <- b:
		case <-o.raft.done:
			o.released(1)
		}
	}
}

// wakeTimer is the loop's one timer, armed for the core's deadline.
type wakeTimer struct {
	t     *time.Timer
	armed time.Time // the deadline it is set for; zero if none
}

func (w *wakeTimer) c() <-chan time.Time {
	if w.t == nil {
		return nil
	}
	return w.t.C
}

// fired records that the timer went off.
func (w *wakeTimer) fired() { w.armed = time.Time{} }

// set arms the timer for at (ok), or disarms it (!ok); an unchanged
// deadline leaves it alone.
func (w *wakeTimer) set(at time.Time, ok bool) {
	switch {
	case !ok && !w.armed.IsZero():
		w.t.Stop()
		w.armed = time.Time{}
	case ok && !at.Equal(w.armed):
		if w.t == nil {
			w.t = time.NewTimer(time.Until(at))
		} else {
			w.t.Reset(time.Until(at))
		}
		w.armed = at
	}
}

func (w *wakeTimer) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

// seal turns batches into blocks: number, link, data hash, the orderer's
// signature, the encoding. It runs beside the loop, so signing one block
// overlaps cutting the next.
func (o *Orderer) seal(next uint64, prev []byte) {
	defer close(o.sealed)
	for b := range o.cuts {
		if o.sealHook != nil {
			o.sealHook()
		}
		if b.sync != nil { // Raft catch-up: continue the chain after it
			if b.sync.Height > next {
				next, prev = b.sync.Height, b.sync.Hash
			}
			o.sealed <- sealedBlock{sync: b.sync}
			continue
		}
		if o.raft != nil && b.num != next && o.fatal.Load() == nil {
			// The invariant that makes all members' chains identical.
			o.fail(fmt.Errorf("%w: the applied Raft log numbers a block %d, seal expected %d", ErrFailed, b.num, next))
		}
		if o.fatal.Load() == nil { // else drain so the loop never blocks
			if hh, ok := o.sealOne(next, prev, b); ok {
				next, prev = next+1, hh
				continue // persist releases it once durable
			}
		}
		o.sealReleased(1) // no block will reach persist
	}
}

// sealReleased is released for the single-node pipeline; in Raft mode
// the Raft loop counts proposals instead (they are released when applied).
func (o *Orderer) sealReleased(n int) {
	if o.raft == nil {
		o.released(n)
	}
}

// Report records, for pacing (stream mode, single node), that the gateway
// of peer saw its peer at committed height height. It is advisory: a
// wrong report costs at most paceMaxHold of latency per block.
func (o *Orderer) Report(peer string, height uint64) {
	if o.idle == nil || o.raft != nil || height == 0 {
		return
	}
	o.pace.Report(peer, height, time.Now())
	if o.holding.Load() {
		select {
		case o.idle <- struct{}{}:
		default:
		}
	}
}

// released tells the loop, in stream mode, that n batches are now durable
// blocks (or were dropped after a failure): when none is left in flight,
// the pipeline is free and the loop cuts whatever is pending.
func (o *Orderer) released(n int) {
	if o.idle != nil && o.inSeal.Add(-int64(n)) == 0 {
		select {
		case o.idle <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// sealOne builds, signs and encodes block next from b, hands it to
// persist and returns its header hash; on failure it records the fatal
// error and returns false.
func (o *Orderer) sealOne(next uint64, prev []byte, b batch) ([]byte, bool) {
	var signer api.Signer // an untyped nil leaves the block unsigned
	if o.ckpt.sign(next, time.Now()) {
		signer = o.cfg.Signer
		o.m.signed.Add(1)
	}
	blk, err := api.BuildBlock(next, prev, b.Txs, signer)
	if err != nil {
		o.fail(fmt.Errorf("%w: sealing block %d: %w", ErrFailed, next, err))
		return nil, false
	}
	codes := bytes.Repeat([]byte{byte(api.TxValidationCode_NOT_VALIDATED)}, len(b.Txs))
	blk.Metadata.ValidationCodes = codes
	raw, err := proto.Marshal(blk)
	if err != nil {
		o.fail(fmt.Errorf("%w: encoding block %d: %w", ErrFailed, next, err))
		return nil, false
	}
	hh := api.HeaderHash(blk.Header)
	n := 0
	for _, tx := range b.Txs {
		n += len(tx)
	}
	o.sealed <- sealedBlock{
		entry:   ledger.Entry{Number: next, HeaderHash: hh, PrevHash: prev, Raw: raw, TxIDs: b.IDs, Codes: codes},
		txBytes: n,
	}
	return hh, true
}

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
