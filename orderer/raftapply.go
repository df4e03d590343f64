package orderer

import (
	"fmt"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Applying: committed entries become numbered blocks for seal; raft
// snapshots in (from the leader) and out (log compaction).

// apply applies one committed entry. Block numbers come from the
// position in the applied log alone (r.next), identical on every member.
func (r *raftNode) apply(e *pb.Entry) {
	r.applyIdx = e.GetIndex()
	defer r.applied.Store(e.GetIndex())
	// After e's own proposal (if it is one) is accounted for: an entry of
	// a later term settles the fate of the orphans (proposals.go).
	defer r.retryLost(e.GetTerm())
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
	if be.Proposer == r.cfg.ID {
		if d, ok := r.inflight.applied(be.Term, be.Seq, time.Now()); ok {
			r.o.m.proposalLatency(d)
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

// release tells stream mode's loop that n tracked proposals are gone
// (applied, abandoned or expired): it then sees the pipeline free.
func (r *raftNode) release(n int) {
	if n > 0 {
		r.o.released(n)
	}
}

// proposalExpiry is the age at which a proposal is taken for lost (a
// forwarded proposal dropped on the way), so that stream mode does not
// wait for it forever: two election timeouts.
func (r *raftNode) proposalExpiry() time.Duration {
	return 2 * time.Duration(r.cfg.ElectionTicks) * r.cfg.TickInterval
}

// orphanExpiry is the age at which an orphan whose fate this member has
// not learned (it was cut off from the others) is forgotten, bounding the
// memory kept: ten election timeouts. Its clients resubmit.
func (r *raftNode) orphanExpiry() time.Duration { return 5 * r.proposalExpiry() }

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
	r.inflight.forgetOrphans() // applied or lost, in entries this member will never see
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
