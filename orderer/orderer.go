package orderer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
	grpcpeer "google.golang.org/grpc/peer"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/orderer/cut"
)

// Pipeline depths between the stages (see doc.go).
const (
	cutDepth    = 16 // cut batches waiting to be sealed
	sealedDepth = 64 // sealed blocks waiting to be persisted
	maxGroup    = 64 // blocks per Append (one fsync)
)

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
	pace        *cut.Pacer // Config.Pacer, or its own
	pacing      bool       // stream mode, single node: attached to pace
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
	if o.pace = cfg.Pacer; o.pace == nil {
		o.pace = &cut.Pacer{}
	}
	o.notify.ch = make(chan struct{})
	if cfg.Raft != nil {
		r, err := newRaftNode(o, *cfg.Raft)
		if err != nil {
			return nil, err
		}
		o.raft = r
	}
	o.pacing = o.idle != nil && o.raft == nil
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
	if o.pacing {
		o.pace.Attach(o.cfg.Channel, o.wakeHeld)
	}
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
	if o.pacing {
		o.pace.Detach(o.cfg.Channel)
	}
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
	var pacing *cut.Pacing
	if o.pacing {
		pacing = &cut.Pacing{Pacer: o.pace, Channel: o.cfg.Channel, Height: o.cfg.Store.Height(), MaxHold: o.paceMaxHold}
	}
	f := cut.NewFlow(o.cfg.Batch, pacing)
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
		o.countInFlight()
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

// Report records, for pacing (stream mode, single node), that the gateway
// of peer saw its peer at committed height height. It is advisory: a
// wrong report costs at most cut.PaceMaxHold of latency per block.
//
// One Pacer serves every channel of the process, so a low height said in
// a peer's name holds back the cuts of every channel that peer serves.
// The reporter is therefore the caller's TLS certificate, not the name it
// claims: it must be a peer of this channel (not revoked), and its org and
// CN name it; any other caller's report is dropped (Metrics.ReportsRefused).
// Only a call on a connection without TLS (an orderer served without it,
// in tests) is taken at its word.
func (o *Orderer) Report(ctx context.Context, peer string, height uint64) {
	if !o.pacing || height == 0 {
		return
	}
	name, ok := o.reporter(ctx, peer)
	if !ok {
		o.m.reportsRefused.Add(1)
		return
	}
	o.pace.Report(name, o.cfg.Channel, height, time.Now()) // wakes held loops
}

// reporter names the peer behind a height report (see Report).
func (o *Orderer) reporter(ctx context.Context, claimed string) (string, bool) {
	p, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return claimed, true // in-process
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return claimed, true // no TLS: nothing to check against
	}
	if len(ti.State.PeerCertificates) == 0 {
		return "", false
	}
	m, err := caller.CertMember(o.cfg.Registry, ti.State.PeerCertificates[0])
	if err == nil {
		err = o.cfg.Registry.Revoked(m)
	}
	if err != nil || m.Role != identity.RolePeer {
		return "", false
	}
	return m.Org + "/" + m.Name, true
}

// wakeHeld wakes the loop if it holds a cut for a peer (the Pacer calls
// it after every report, on any of its channels).
func (o *Orderer) wakeHeld() {
	if o.holding.Load() {
		select {
		case o.idle <- struct{}{}:
		default:
		}
	}
}

// countInFlight counts, in stream mode, one batch handed on (emit) or
// proposed again (retryLost) as in flight until released.
func (o *Orderer) countInFlight() {
	if o.idle != nil {
		o.inSeal.Add(1)
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
