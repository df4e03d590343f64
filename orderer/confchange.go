package orderer

import (
	"errors"
	"fmt"

	"github.com/strand-ledger/strand/orderer/cut"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// The Raft loop's side of config updates (see "Config updates" in
// doc.go): proposing a checked update as a raft ConfChange, and applying
// a committed one. All of it runs on the Raft loop.

// ErrRemoved: a config update removed this orderer from the channel's
// ordering service; it orders nothing more (its stored blocks are still
// delivered).
var ErrRemoved = errors.New("orderer: removed from the channel's ordering service")

// addressBook is the set of orderers the transport dials and accepts: the
// current config's, plus those of RaftConfig.Join that the config has not
// caught up with yet (ids above every id it has seen), so that a new
// member reaches the cluster before it has applied the update that added
// it.
func (r *raftNode) addressBook() []RaftPeer {
	out := append([]RaftPeer(nil), r.conf.Peers...)
	for _, p := range r.cfg.Join {
		if _, ok := r.conf.peer(p.ID); !ok && p.ID > r.conf.MaxID {
			out = append(out, p)
		}
	}
	return out
}

// publishConf makes r.conf visible to other goroutines and to the
// transport.
func (r *raftNode) publishConf() error {
	conf := r.conf
	r.confView.Store(&conf)
	return r.tr.setPeers(r.addressBook())
}

// proposeConfig proposes a config update the loop cut as its own batch.
// The update is checked again against the config as applied here (it was
// checked at admission, perhaps on another member, against an older
// state). raft accepts one config change at a time: while one is
// pending it turns another into an empty entry, which applies as nothing;
// the admins then see no config block and submit again.
func (r *raftNode) proposeConfig(b batch) {
	ch, err := checkConfigUpdate(r.o.cfg.Registry, r.o.cfg.Channel, r.conf, b.Txs[0])
	if err != nil {
		r.o.cfg.Log.Warn("raft: config update dropped at proposal", "channel", r.o.cfg.Channel, "raft_id", r.cfg.ID, "err", err)
		r.o.released(1)
		return
	}
	if ch.cc.GetType() == pb.ConfChangeType_ConfChangeRemoveNode && ch.cc.GetNodeId() == r.cfg.ID && r.lead == r.cfg.ID {
		// A leader that removes itself would stop before the others
		// learn that the removal committed (in a two-member cluster the
		// last one could then never elect itself). So it hands over
		// leadership first and proposes the update to the new leader.
		if to := r.successor(); to != raft.None {
			r.o.cfg.Log.Info("raft: this leader is being removed: transferring leadership before proposing its removal",
				"channel", r.o.cfg.Channel, "raft_id", r.cfg.ID, "to", to, "update", ch.id)
			r.rn.TransferLeader(to)
			r.held = append(r.held, b)
			return
		}
	}
	if err := r.rn.ProposeConfChange(ch.cc); err != nil {
		if errors.Is(err, raft.ErrProposalDropped) && r.mustHold() {
			r.held = append(r.held, b)
			return
		}
		r.o.cfg.Log.Warn("raft: config update dropped; submit it again", "channel", r.o.cfg.Channel, "raft_id", r.cfg.ID, "update", ch.id, "err", err)
		r.o.released(1)
		return
	}
	r.o.released(1) // a config proposal is not tracked in own
	r.o.cfg.Log.Info("raft: config update proposed", "channel", r.o.cfg.Channel, "raft_id", r.cfg.ID, "update", ch.id,
		"change", ch.cc.GetType().String(), "orderer", ch.cc.GetNodeId())
}

// successor returns the voter other than this one whose log matches the
// leader's furthest (raft.None if there is none).
func (r *raftNode) successor() uint64 {
	best, match := uint64(raft.None), uint64(0)
	for id, pr := range r.rn.Status().Progress {
		if id != r.cfg.ID && !pr.IsLearner && (best == raft.None || pr.Match > match) {
			best, match = id, pr.Match
		}
	}
	return best
}

// applyConfig applies a committed config update: every member checks it
// against the same config state, so all accept or all refuse it. A
// refused one is applied to raft as a no-op (node id 0, as raft asks). An
// accepted one changes raft's membership, the config state and the
// transport, and becomes a config block numbered like any block entry.
func (r *raftNode) applyConfig(index uint64, cc *pb.ConfChange) {
	ch, err := checkConfigUpdate(r.o.cfg.Registry, r.o.cfg.Channel, r.conf, cc.GetContext())
	if err == nil && (ch.cc.GetType() != cc.GetType() || ch.cc.GetNodeId() != cc.GetNodeId()) {
		err = fmt.Errorf("%w: %s: the entry's change (%s %d) is not the update's (%s %d)", ErrConfigUpdate, ch.id,
			cc.GetType(), cc.GetNodeId(), ch.cc.GetType(), ch.cc.GetNodeId())
	}
	if err != nil {
		r.o.cfg.Log.Warn("raft: committed config update refused by every member alike; applied as nothing", "channel", r.o.cfg.Channel,
			"raft_id", r.cfg.ID, "index", index, "err", err)
		noop := proto.Clone(cc).(*pb.ConfChange)
		noop.NodeId = proto.Uint64(0)
		r.cs = r.rn.ApplyConfChange(noop)
		return
	}
	r.cs = r.rn.ApplyConfChange(cc)
	prev := r.conf
	r.conf = ch.next
	if err := r.publishConf(); err != nil {
		r.o.fail(fmt.Errorf("%w: config update %s: %w", ErrFailed, ch.id, err))
	}
	r.o.m.configUpdates.Add(1)
	r.o.cfg.Log.Info("raft: config update applied", "channel", r.o.cfg.Channel, "raft_id", r.cfg.ID, "update", ch.id, "sequence", ch.next.Seq,
		"change", cc.GetType().String(), "orderer", cc.GetNodeId(), "before", prev.names(), "after", ch.next.names(), "block", r.next)
	n := r.next
	r.next++
	if n >= r.skipBelow {
		r.o.cuts <- batch{Batch: cut.Batch{Txs: [][]byte{ch.raw}, IDs: []string{ch.id}}, num: n}
	}
	if cc.GetType() == pb.ConfChangeType_ConfChangeRemoveNode {
		if p, ok := prev.peer(cc.GetNodeId()); ok {
			r.tr.noteRemoved(p, ch.raw)
		}
		if cc.GetNodeId() == r.cfg.ID {
			r.removed = true
		}
	}
}

// removedHint handles a member's refusal of this member as removed,
// with the config update that removed it. This member stops if the
// update is the next one for its config state and removes it: then it
// would have applied it, had it learnt the commit (the leader stops
// replicating to a member once its removal applies). Its store ends
// before the config block; the others hold it. Otherwise (an update it
// cannot check, being further behind) it logs and carries on.
func (r *raftNode) removedHint(from uint64, update []byte) {
	ch, err := checkConfigUpdate(r.o.cfg.Registry, r.o.cfg.Channel, r.conf, update)
	if err == nil && (ch.cc.GetType() != pb.ConfChangeType_ConfChangeRemoveNode || ch.cc.GetNodeId() != r.cfg.ID) {
		err = fmt.Errorf("%s does not remove orderer %d", ch.id, r.cfg.ID)
	}
	if err != nil {
		r.refusals.warn(r.o.cfg.Log, "removed_hint", "raft: another orderer refuses this one as removed, with an update this one cannot confirm",
			"channel", r.o.cfg.Channel, "raft_id", r.cfg.ID, "from", from, "err", err)
		return
	}
	r.o.cfg.Log.Info("raft: another orderer refuses this one as removed by a config update it has checked", "channel", r.o.cfg.Channel,
		"raft_id", r.cfg.ID, "from", from, "update", ch.id, "sequence", ch.next.Seq)
	r.conf = ch.next
	r.confView.Store(&ch.next)
	r.removed = true
}

// removedFromCluster records that a config update removed this member:
// Submit refuses from now on with ErrRemoved; Close does not report it
// as a failure.
func (o *Orderer) removedFromCluster(seq uint64) {
	err := fmt.Errorf("%w: config update %d removed orderer %d of channel %q", ErrRemoved, seq, o.raft.cfg.ID, o.cfg.Channel)
	if o.removed.CompareAndSwap(nil, &err) {
		o.cfg.Log.Info("raft: this orderer was removed from the channel's ordering service by a config update; it stops ordering",
			"channel", o.cfg.Channel, "raft_id", o.raft.cfg.ID, "sequence", seq)
	}
}
