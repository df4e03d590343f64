package orderer

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

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
	lead                   uint64 // leader as of the last SoftState
	leadTerm               uint64 // the term in which lead was recorded
	lastLead, lastLeadTerm uint64 // the last leader other than none, and its term
	cause                  string // why the leader is changing, when known (leaderChangeCause)
	next                   uint64 // the block number of the next applied block entry
	skipBelow              uint64 // block entries numbered below this are already stored
	snapIndex              uint64 // index of the latest snapshot
	applyIdx               uint64 // index of the last applied entry
	seq                    uint64 // proposals made
	propTerm               uint64 // the term own counts proposals of
	own                    map[uint64]time.Time
	// held are batches raft refused while no leader was known or this
	// leader was transferring leadership (ErrProposalDropped, so they are
	// in no log, and proposing them later cannot order them twice); they
	// are proposed once raft takes proposals again (proposeHeld).
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
		kill: make(chan struct{}), own: map[uint64]time.Time{}, refusals: newRateLog(refusalLogBurst, refusalLogEvery, time.Now)}
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
	if hs, _, err := log.Storage().InitialState(); err == nil {
		r.term.Store(hs.GetTerm())
		r.propTerm = hs.GetTerm()
	}
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
	var drainUntil time.Time // set when the loop has closed props (Close)
	for {
		select {
		case <-r.ticker.C:
			r.tick()
			r.expire()
			r.maybeSnapshot()
			if !drainUntil.IsZero() && time.Now().After(drainUntil) {
				return
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
				// election timeout to commit and apply, then stop.
				props = nil
				r.wake()
				drainUntil = time.Now().Add(time.Duration(r.cfg.ElectionTicks) * r.cfg.TickInterval)
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
				r.release(len(r.own))
				return
			}
		}
		r.proposeHeld()
		if r.removed {
			r.o.removedFromCluster(r.conf.Seq)
			return
		}
		if !drainUntil.IsZero() && len(r.own) == 0 && len(r.held) == 0 {
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
		if hs.GetTerm() != r.term.Load() {
			r.term.Store(hs.GetTerm())
			r.release(len(r.own)) // proposals of an older term: no longer tracked
			r.propTerm = hs.GetTerm()
		}
		r.commit.Store(hs.GetCommit())
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
	for _, m := range rd.Messages {
		r.tr.send(m)
	}
	// 3. apply, in order
	for _, e := range rd.CommittedEntries {
		r.apply(e)
	}
	// 4.
	r.rn.Advance(rd)
	return nil
}

// leadership records and logs a change of leader: the previous leader,
// the new one, the term and, as far as this member can tell, why.
func (r *raftNode) leadership(ss *raft.SoftState) {
	if ss.Lead == r.lead {
		return
	}
	prev, prevTerm := r.lead, r.leadTerm
	term := r.rn.BasicStatus().GetTerm()
	why := r.leaderChangeCause(ss, prev, prevTerm, term)
	if prev == raft.None { // between leaders: name the last one
		prev, prevTerm = r.lastLead, r.lastLeadTerm
	}
	r.lead, r.leadTerm = ss.Lead, term
	if ss.Lead != raft.None {
		r.lastLead, r.lastLeadTerm = ss.Lead, term
	}
	r.leader.Store(ss.Lead)
	r.o.m.leaderChanges.Add(1)
	r.o.cfg.Log.Info("raft leader changed", "channel", r.o.cfg.Channel, "raft_id", r.cfg.ID,
		"previous", prev, "previous_name", r.name(prev), "leader", ss.Lead, "leader_name", r.name(ss.Lead),
		"term", term, "state", ss.RaftState.String(), "why", why)
}

// Causes of a leader change, as leaderChangeCause names them.
const (
	causeTransfer    = "leader transfer"
	causeCheckQuorum = "check-quorum: the leader did not hear from a quorum within an election timeout and stepped down"
	causeTimeout     = "election timeout: no heartbeat from the leader within an election timeout"
	causeElsewhere   = "another orderer's election timeout started an election"
)

// leaderChangeCause says why the leader changed from prev (leader in
// prevTerm) to ss.Lead in term. r.cause holds what the loop saw on the
// way: a vote request or MsgTimeoutNow of a leader transfer, or the
// cause recorded when the leader was lost; it is consumed once a new
// leader is known.
func (r *raftNode) leaderChangeCause(ss *raft.SoftState, prev, prevTerm, term uint64) string {
	if ss.Lead == raft.None {
		switch {
		case r.cause != "":
		case prev == r.cfg.ID && term == prevTerm:
			r.cause = causeCheckQuorum
		case ss.RaftState == raft.StatePreCandidate || ss.RaftState == raft.StateCandidate:
			r.cause = causeTimeout
		default:
			r.cause = causeElsewhere
		}
		return r.cause
	}
	why := r.cause
	r.cause = ""
	switch {
	case why == causeTransfer:
		return causeTransfer + ": elected at the previous leader's request"
	case why != "":
		return "elected after " + why
	case prev == raft.None && r.lastLead == raft.None:
		return "first leader this orderer has heard of since it started"
	case prev == raft.None:
		return "a new leader after an election"
	}
	return fmt.Sprintf("heard from the leader of term %d, elected after the term %d of leader %d ended", term, prevTerm, prev)
}

// noteCause records, before raft steps m, a message that tells why the
// leader is about to change: a leader transfer shows as MsgTimeoutNow at
// the transferee and as vote requests with the transfer context at
// everyone else.
func (r *raftNode) noteCause(m *pb.Message) {
	switch m.GetType() {
	case pb.MessageType_MsgTimeoutNow:
		r.cause = causeTransfer
	case pb.MessageType_MsgVote:
		if string(m.GetContext()) == campaignTransfer && m.GetTerm() > r.term.Load() {
			r.cause = causeTransfer
		}
	}
}

// campaignTransfer is the context etcd raft puts on the vote requests of
// an election that a leader transfer started (raft.campaignTransfer).
const campaignTransfer = "CampaignTransfer"

func (r *raftNode) name(id uint64) string {
	if p, ok := r.conf.peer(id); ok {
		return p.Org + "/" + p.Name
	}
	if p, ok := r.cfg.joinPeer(id); ok {
		return p.Org + "/" + p.Name
	}
	return ""
}

// propose hands a cut batch to raft. A batch raft refuses while no leader
// is known or a leader transfer is under way is held and proposed once a
// leader is known (held, proposeHeld); one refused otherwise loses its
// transactions: their clients, who learn of commits from the peers,
// resubmit.
func (r *raftNode) propose(b batch) {
	if b.Config {
		r.proposeConfig(b)
		return
	}
	r.seq++
	data := encodeEntry(nil, blockEntry{Proposer: r.cfg.ID, Term: r.propTerm, Seq: r.seq, batch: b})
	if err := r.rn.Propose(data); err != nil {
		if errors.Is(err, raft.ErrProposalDropped) && r.mustHold() {
			r.held = append(r.held, b) // see held
			return
		}
		r.o.m.proposalsDropped.Add(1)
		r.o.cfg.Log.Warn("raft: proposal dropped; its clients must resubmit", "channel", r.o.cfg.Channel, "raft_id", r.cfg.ID,
			"txs", len(b.Txs), "err", err)
		r.o.released(1)
		return
	}
	r.o.m.proposals.Add(1)
	r.own[r.seq] = time.Now()
}

// mustHold reports whether raft refuses proposals for a while now: no
// leader is known (an election, or a leader change seen half-way), or
// this leader is transferring leadership.
func (r *raftNode) mustHold() bool {
	st := r.rn.BasicStatus()
	return st.Lead == raft.None || st.LeadTransferee != raft.None
}

// proposeHeld proposes the held batches once raft takes proposals again
// (a leader is known and no transfer is under way; raft aborts a transfer
// after an election timeout); as a follower, raft forwards them to the
// leader.
func (r *raftNode) proposeHeld() {
	if len(r.held) == 0 || r.mustHold() {
		return
	}
	held := r.held
	r.held = nil
	for _, b := range held {
		r.propose(b)
	}
}

// transfer starts a leader transfer to member to (TransferLeader).
func (r *raftNode) transfer(to uint64) error {
	switch {
	case r.lead == raft.None:
		return fmt.Errorf("%w: transfer leader to %d: no leader is known now; retry", ErrUnavailable, to)
	case r.lead == to:
		return nil
	}
	r.rn.TransferLeader(to)
	return nil
}

// memberList names the members for messages: "1 (Org/name), 2 (...)".
func (r *raftNode) memberList() string { return r.confView.Load().names() }

// apply applies one committed entry. Block numbers come from the
// position in the applied log alone (r.next), identical on every member.
func (r *raftNode) apply(e *pb.Entry) {
	r.applyIdx = e.GetIndex()
	defer r.applied.Store(e.GetIndex())
	switch e.GetType() {
	case pb.EntryType_EntryConfChange:
		var cc pb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			// raft must still apply it: as a no-op (node id 0), alike everywhere
			r.o.cfg.Log.Error("raft: a committed conf change does not decode; applied as a no-op", "index", e.GetIndex(), "err", err)
			r.cs = r.rn.ApplyConfChange(&pb.ConfChange{})
			return
		}
		if len(cc.GetContext()) == 0 { // the bootstrap's: the genesis members
			r.cs = r.rn.ApplyConfChange(&cc)
			return
		}
		r.applyConfig(e.GetIndex(), &cc)
		return
	case pb.EntryType_EntryConfChangeV2:
		var cc pb.ConfChangeV2
		if err := proto.Unmarshal(e.GetData(), &cc); err == nil {
			r.cs = r.rn.ApplyConfChange(&cc)
		}
		return
	}
	if len(e.GetData()) == 0 {
		return // a new leader's empty entry
	}
	be, err := decodeEntry(e.GetData())
	if err != nil { // every member skips it alike
		r.o.cfg.Log.Error("raft: skipping a committed entry that does not decode", "index", e.GetIndex(), "err", err)
		return
	}
	if be.Proposer == r.cfg.ID && be.Term == r.propTerm {
		if t, ok := r.own[be.Seq]; ok {
			delete(r.own, be.Seq)
			r.o.m.proposalLatency(time.Since(t))
			r.o.released(1)
		}
	}
	n := r.next
	r.next++
	if n < r.skipBelow {
		return // stored before a restart
	}
	be.batch.num = n
	r.o.cuts <- be.batch
}

// release forgets n tracked proposals (all of them when n = len(own)):
// stream mode's loop then sees the pipeline free.
func (r *raftNode) release(n int) {
	if n == 0 {
		return
	}
	if n == len(r.own) {
		clear(r.own)
	}
	r.o.released(n)
}

// expire forgets proposals older than two election timeouts: raft lost
// them (a forwarded proposal dropped on the way), and stream mode must not
// wait for them forever.
func (r *raftNode) expire() {
	limit := 2 * time.Duration(r.cfg.ElectionTicks) * r.cfg.TickInterval
	for s, t := range r.own {
		if time.Since(t) > limit {
			delete(r.own, s)
			r.o.released(1)
		}
	}
}

// installSnapshot moves the apply position to a snapshot received from
// the leader; blocks the store lacks are fetched by persist (catchUp),
// in order with the blocks before and after.
func (r *raftNode) installSnapshot(snap *pb.Snapshot) error {
	st, err := decodeSnap(snap.GetData())
	if err != nil {
		return fmt.Errorf("%w: snapshot at index %d from the leader: %w", ErrFailed, snap.GetMetadata().GetIndex(), err)
	}
	md := snap.GetMetadata()
	r.cs, r.snapIndex, r.applyIdx = md.GetConfState(), md.GetIndex(), md.GetIndex()
	r.applied.Store(md.GetIndex())
	r.o.cfg.Log.Info("raft: installed a snapshot from the leader", "raft_id", r.cfg.ID, "index", md.GetIndex(), "height", st.Height)
	r.o.m.snapshotsIn.Add(1)
	if st.Config != nil {
		r.conf = *st.Config
		if err := r.publishConf(); err != nil {
			return fmt.Errorf("%w: snapshot at index %d: %w", ErrFailed, md.GetIndex(), err)
		}
	}
	if st.Height > r.next {
		r.next = st.Height
		r.o.cuts <- batch{sync: &st}
	}
	return nil
}

// maybeSnapshot compacts the log once SnapshotEntries entries were
// applied since the last snapshot and their blocks are durable.
func (r *raftNode) maybeSnapshot() {
	if r.applyIdx < r.snapIndex+r.cfg.SnapshotEntries || r.cs == nil {
		return
	}
	store := r.o.cfg.Store
	if store.Height() < r.next {
		return // blocks still in the pipeline
	}
	conf := r.conf
	st := snapState{Height: r.next, Config: &conf}
	if r.next > 0 {
		st.Hash = r.o.hashAt(r.next - 1)
		if st.Hash == nil {
			return
		}
	}
	// The blocks were appended without fsync (persist): make them durable
	// before the log entries that could recreate them go.
	if err := store.Sync(); err != nil {
		r.o.fail(fmt.Errorf("%w: syncing the block store before compacting the raft log: %w", ErrFailed, err))
		return
	}
	if err := r.log.Compact(r.applyIdx, r.cs, encodeSnap(st), r.cfg.KeepEntries); err != nil {
		r.o.fail(fmt.Errorf("%w: raft log compaction at index %d: %w", ErrFailed, r.applyIdx, err))
		return
	}
	r.snapIndex = r.applyIdx
	r.o.m.snapshots.Add(1)
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
