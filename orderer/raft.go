package orderer

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/orderer/raftlog"
)

// raftNode is the Raft side of a cluster member. Its run goroutine is the
// only one that touches rn, log and the fields marked "loop only"; the
// atomics are read by Submit and Metrics.
//
// The Ready contract of etcd raft, as run keeps it, for each Ready:
//
//  1. persist the snapshot, entries and hard state (log.Save, one fsync);
//  2. then send the messages (never before: a vote or an append ack must
//     not be seen by others before it is durable here);
//  3. then apply the committed entries in log order, handing each block
//     entry to seal (a bounded channel: a slow disk slows the loop, in
//     order, rather than losing or reordering blocks);
//  4. then Advance.
type raftNode struct {
	o   *Orderer
	cfg RaftConfig
	log *raftlog.Log
	rn  *raft.RawNode
	tr  *transport
	// refusals rate-limits the logs of refused input (transport,
	// catch-up), per kind of refusal.
	refusals *rateLog

	props     chan batch       // loop → run: cut batches to propose
	transfers chan transferReq // TransferLeader → run
	done      chan struct{}    // closed when run has returned
	wakes     chan struct{}    // Orderer.route → run: wake from quiescence (quiesce.go)
	kill      chan struct{}    // tests: stop at once, like a crash

	leader, term, commit, applied atomic.Uint64
	quiescedNow                   atomic.Bool // quiesced, for metrics
	// confView is the latest config state (conf), for other goroutines:
	// admission of config updates, the Admin service, metrics.
	confView atomic.Pointer[configState]

	// loop only
	cs                     *pb.ConfState
	lead                   uint64    // leader as of the last SoftState
	leadTerm               uint64    // the term in which lead was recorded
	lastLead, lastLeadTerm uint64    // the last leader other than none, and its term
	cause                  string    // why the leader is changing, when known (leaderChangeCause)
	next                   uint64    // the block number of the next applied block entry
	skipBelow              uint64    // block entries numbered below this are already stored
	snapIndex              uint64    // index of the latest snapshot
	applyIdx               uint64    // index of the last applied entry
	inflight               proposals // own proposals not yet applied (proposals.go)
	// held are batches raft refused while no leader was known or this
	// leader was transferring leadership (ErrProposalDropped, so they are
	// in no log, and proposing them later cannot order them twice), and
	// batches this member proposed as leader that an entry of a later
	// term showed to be in no committed log (retryLost); they are
	// proposed once raft takes proposals again (proposeHeld).
	held []batch
	// conf is the channel config as of the last applied entry (config.go);
	// removed is set when a config update removed this member: run stops
	// once the config block is handed to seal.
	conf    configState
	removed bool
	// quiesced: this member does not tick (quiesce.go); settledTicks
	// counts the leader's ticks with nothing in flight.
	quiesced     bool
	settledTicks int
	ticker       *time.Ticker // stopped while quiesced: no wakeups at all
}

// newRaftNode opens the Raft log and builds the node; run starts it.
func newRaftNode(o *Orderer, rc RaftConfig) (*raftNode, error) {
	rc.EnsureDefaults()
	if err := rc.Validate(); err != nil {
		return nil, err
	}
	log, rep, err := raftlog.Open(rc.Dir)
	if err != nil {
		return nil, fmt.Errorf("orderer: raft log in %s: %w", rc.Dir, err)
	}
	if rep.TruncatedAt >= 0 {
		o.cfg.Log.Warn("raft log: truncated a torn tail", "dir", rc.Dir, "offset", rep.TruncatedAt, "dropped_bytes", rep.Dropped, "reason", rep.Reason)
	}
	r := &raftNode{o: o, cfg: rc, log: log, props: make(chan batch, cutDepth), transfers: make(chan transferReq), done: make(chan struct{}), wakes: make(chan struct{}, 1),
		kill: make(chan struct{}), refusals: newRateLog(refusalLogBurst, refusalLogEvery, time.Now)}
	// Applied: the log may keep entries before its latest snapshot
	// (KeepEntries); they are in the snapshot's blocks, so raft must not
	// hand them to apply again, or they would be numbered twice.
	rn, err := raft.NewRawNode(&raft.Config{
		ID: rc.ID, ElectionTick: rc.ElectionTicks, HeartbeatTick: rc.HeartbeatTicks, Storage: log.Storage(),
		Applied:       log.Snapshot().GetMetadata().GetIndex(),
		MaxSizePerMsg: rc.MaxSizePerMsg, MaxInflightMsgs: rc.MaxInflight, MaxUncommittedEntriesSize: 1 << 30,
		CheckQuorum: true, PreVote: true, StepDownOnRemoval: true, Logger: raftLogger{o.cfg.Log.With("raft_id", rc.ID)},
	})
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("orderer: raft node %d: %w", rc.ID, err)
	}
	if log.Empty() && rc.Join == nil {
		peers := make([]raft.Peer, len(rc.Peers))
		for i, p := range rc.Peers {
			peers[i] = raft.Peer{ID: p.ID}
		}
		if err := rn.Bootstrap(peers); err != nil {
			log.Close()
			return nil, fmt.Errorf("orderer: bootstrap raft node %d: %w", rc.ID, err)
		}
	}
	r.rn = rn
	r.conf = genesisConfig(rc.Peers)
	view := r.conf // a copy: r.conf is the loop's alone
	r.confView.Store(&view)
	var term uint64
	if hs, _, err := log.Storage().InitialState(); err == nil {
		term = hs.GetTerm()
		r.term.Store(term)
	}
	r.inflight = newProposals(term)
	tc := rc
	tc.Peers = r.addressBook()
	if r.tr, err = newTransport(o, &tc); err != nil {
		log.Close()
		return nil, err
	}
	return r, nil
}

// startState sets the apply position from the latest snapshot (or the
// genesis block) and the store, and returns the snapshot state if the
// store is behind it (the blocks must be fetched first).
func (r *raftNode) startState() (*snapState, error) {
	st := snapState{}
	if r.o.cfg.Genesis != nil {
		st = snapState{Height: 1, Hash: r.o.hashAt(0)}
	}
	snap := r.log.Snapshot()
	if md := snap.GetMetadata(); md.GetIndex() > 0 {
		s, err := decodeSnap(snap.GetData())
		if err != nil {
			return nil, fmt.Errorf("orderer: the raft log's snapshot at index %d: %w", md.GetIndex(), err)
		}
		st, r.cs, r.snapIndex, r.applyIdx = s, md.GetConfState(), md.GetIndex(), md.GetIndex()
		if s.Config != nil {
			r.conf = *s.Config
			if err := r.publishConf(); err != nil {
				return nil, err
			}
		}
	}
	r.next, r.skipBelow = st.Height, r.o.cfg.Store.Height()
	if st.Height > r.skipBelow {
		return &st, nil
	}
	return nil, nil
}

// run is the Raft loop: one goroutine drives the RawNode (see raftNode).
func (r *raftNode) run(behind *snapState) {
	defer close(r.done)
	defer close(r.o.cuts) // run is the writer of cuts in Raft mode
	defer r.tr.close()
	defer r.log.Close()
	if behind != nil {
		r.o.cuts <- batch{sync: behind}
	}
	r.ticker = time.NewTicker(r.cfg.TickInterval)
	defer r.ticker.Stop()
	props := r.props
	drainTicks := 0 // ticks left to drain, once the loop has closed props (Close)
	for {
		select {
		case <-r.ticker.C:
			r.tick()
			r.release(r.inflight.expire(time.Now(), r.proposalExpiry(), r.orphanExpiry()))
			r.maybeSnapshot()
			if drainTicks > 0 {
				if drainTicks--; drainTicks == 0 {
					return
				}
			}
		case m := <-r.tr.recv:
			r.noteCause(m)
			if err := r.rn.Step(m); err != nil {
				r.o.cfg.Log.Debug("raft: step", "raft_id", r.cfg.ID, "type", m.GetType(), "from", m.GetFrom(), "err", err)
			}
			r.stepped(m)
		case rep := <-r.tr.reports:
			r.wake()
			r.reported(rep)
		case <-r.wakes:
			r.wake()
		case b, ok := <-props:
			if !ok {
				// Close: give this member's last proposals up to one
				// election timeout to commit and apply, then stop. (wake
				// ends quiescence, and a member with proposals in flight
				// does not quiesce, so the ticks come.)
				props = nil
				r.wake()
				drainTicks = r.cfg.ElectionTicks
				break
			}
			r.wake()
			r.propose(b)
		case req := <-r.transfers:
			r.wake()
			req.done <- r.transfer(req.to)
		case <-r.kill:
			return
		}
		// Advance can make the next Ready at once (a single member's own
		// append acknowledged, the commit index moved): drain them all.
		for r.rn.HasReady() {
			if err := r.ready(); err != nil {
				r.o.fail(err)
				r.release(r.inflight.forget())
				return
			}
		}
		r.proposeHeld()
		if r.removed {
			r.o.removedFromCluster(r.conf.Seq)
			return
		}
		if drainTicks > 0 && r.inflight.len() == 0 && len(r.held) == 0 {
			return
		}
	}
}

// ready handles one Ready in the contract's order (see raftNode).
func (r *raftNode) ready() error {
	rd := r.rn.Ready()
	if rd.SoftState != nil {
		r.leadership(rd.SoftState)
	}
	if hs := rd.HardState; !raft.IsEmptyHardState(hs) {
		r.term.Store(hs.GetTerm())
		r.release(r.inflight.newTerm(hs.GetTerm())) // proposals of an older term: no longer tracked
		r.commit.Store(hs.GetCommit())
	}
	// A leader sends before its fsync, so that its followers write the
	// entries while it does (Raft thesis §10.2.1; etcd does the same): the
	// two fsyncs overlap instead of following each other, and a leader's
	// entries reach its followers even if its fsync stalls past their
	// election timeout, so the next leader holds them. Safe: raft counts
	// the leader's own copy only at Advance, after Save; a leader's
	// messages carry no vote; and a leader stepping down in this Ready is
	// no longer one here (r.lead is its SoftState). Everyone else sends
	// only after the fsync: a vote or an acknowledgment must not run ahead
	// of the state it reports.
	early := r.lead == r.cfg.ID
	if early {
		r.sendAll(rd.Messages)
	}
	// 1. persist, fsync
	if err := r.log.Save(rd.HardState, rd.Entries, rd.Snapshot); err != nil {
		return fmt.Errorf("%w: raft log: %w", ErrFailed, err)
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := r.installSnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	// 2. send
	if !early {
		r.sendAll(rd.Messages)
	}
	// 3. apply, in order
	for _, e := range rd.CommittedEntries {
		r.apply(e)
	}
	// 4.
	r.rn.Advance(rd)
	return nil
}

func (r *raftNode) sendAll(msgs []*pb.Message) {
	for _, m := range msgs {
		r.tr.send(m)
	}
}

// reported passes a transport outcome to raft.
func (r *raftNode) reported(rep report) {
	switch {
	case rep.lost: // the loop woke for it; raft learns of losses by sending
	case rep.removedBy != nil:
		r.removedHint(rep.to, rep.removedBy)
	case rep.snapshot && rep.ok:
		r.rn.ReportSnapshot(rep.to, raft.SnapshotFinish)
	case rep.snapshot:
		r.rn.ReportSnapshot(rep.to, raft.SnapshotFailure)
		r.rn.ReportUnreachable(rep.to)
	default:
		r.rn.ReportUnreachable(rep.to)
	}
}

// headerHashOf returns the header hash of a stored block, nil if it
// cannot be read.
func headerHashOf(raw []byte) []byte {
	b, err := api.DecodeBlock(raw)
	if err != nil {
		return nil
	}
	return api.HeaderHash(b.GetHeader())
}

// raftLogger adapts slog to raft's logger: raft's info is our debug.
type raftLogger struct{ l *slog.Logger }

func (g raftLogger) Debug(v ...any)              { g.l.Debug(fmt.Sprint(v...)) }
func (g raftLogger) Debugf(f string, v ...any)   { g.l.Debug(fmt.Sprintf(f, v...)) }
func (g raftLogger) Info(v ...any)               { g.l.Debug(fmt.Sprint(v...)) }
func (g raftLogger) Infof(f string, v ...any)    { g.l.Debug(fmt.Sprintf(f, v...)) }
func (g raftLogger) Warning(v ...any)            { g.l.Warn(fmt.Sprint(v...)) }
func (g raftLogger) Warningf(f string, v ...any) { g.l.Warn(fmt.Sprintf(f, v...)) }
func (g raftLogger) Error(v ...any)              { g.l.Error(fmt.Sprint(v...)) }
func (g raftLogger) Errorf(f string, v ...any)   { g.l.Error(fmt.Sprintf(f, v...)) }
func (g raftLogger) Fatal(v ...any)              { g.l.Error(fmt.Sprint(v...)); panic(fmt.Sprint(v...)) }
func (g raftLogger) Fatalf(f string, v ...any) {
	g.l.Error(fmt.Sprintf(f, v...))
	panic(fmt.Sprintf(f, v...))
}
func (g raftLogger) Panic(v ...any)            { panic(fmt.Sprint(v...)) }
func (g raftLogger) Panicf(f string, v ...any) { panic(fmt.Sprintf(f, v...)) }
