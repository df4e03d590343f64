package orderer

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

// Config updates (see "Config updates" in doc.go) change the channel's
// orderer set by one orderer at a time.
//
// Policy: an update must carry valid signatures of admins of a majority
// of the channel's orgs (more than half of Registry.Orgs(), peer orgs and
// orderer orgs alike; one signature per org counts). Fabric's default for
// the orderer section is /Channel/Orderer/Admins MAJORITY, a majority of
// the orderer orgs' admins only; strand asks all orgs because the orderer
// set decides who can censor or stall every org's transactions and where
// every peer fetches its blocks, and because a network with one orderer
// org (the common case, and localnet's) would otherwise let that one org
// change the ordering service alone.

// ErrConfigUpdate: a config update that does not apply to the channel's
// current config (wrong channel or sequence, not exactly one orderer
// added or removed, a reused id, the policy not met).
var ErrConfigUpdate = errors.New("orderer: config update refused")

// configState is the channel config a Raft member orders under: how many
// config updates were applied (Seq), the orderer set, and the largest
// Raft id ever used (ids are never reused). It is a value: each update
// makes a new one. Every member computes the same states from the same
// committed log.
type configState struct {
	Seq   uint64
	MaxID uint64
	Peers []RaftPeer
}

func genesisConfig(peers []RaftPeer) configState {
	st := configState{Peers: append([]RaftPeer(nil), peers...)}
	for _, p := range peers {
		st.MaxID = max(st.MaxID, p.ID)
	}
	st.sort()
	return st
}

func (st *configState) sort() {
	sort.Slice(st.Peers, func(i, j int) bool { return st.Peers[i].ID < st.Peers[j].ID })
}

func (st configState) peer(id uint64) (RaftPeer, bool) {
	for _, p := range st.Peers {
		if p.ID == id {
			return p, true
		}
	}
	return RaftPeer{}, false
}

// names renders the orderer set for messages: "1 (Org/name), 2 (...)".
func (st configState) names() string {
	s := make([]string, len(st.Peers))
	for i, p := range st.Peers {
		s[i] = fmt.Sprintf("%d (%s/%s)", p.ID, p.Org, p.Name)
	}
	return strings.Join(s, ", ")
}

// configChange is a checked config update: the envelope's exact bytes,
// its id, the Raft change it makes and the config state after it.
type configChange struct {
	raw  []byte
	id   string
	cc   *pb.ConfChange
	next configState
}

// checkConfigUpdate checks a config envelope against the current state
// st: its form, channel and sequence, that it adds exactly one orderer
// (with an id above every id used so far) or removes exactly one, that
// it leaves at least one, and the policy (see above). It reads no clock,
// so every member decides alike on the same log.
func checkConfigUpdate(reg *identity.Registry, channel string, st configState, raw []byte) (configChange, error) {
	env, u, err := api.DecodeConfigEnvelope(raw)
	if err != nil {
		return configChange{}, err
	}
	id := env.ID()
	switch {
	case u.Channel != channel:
		return configChange{}, fmt.Errorf("%w: %s is for channel %q, this is %q", ErrConfigUpdate, id, u.Channel, channel)
	case u.Sequence != st.Seq:
		return configChange{}, fmt.Errorf("%w: %s has sequence %d, the channel has applied %d config updates (want sequence %d)",
			ErrConfigUpdate, id, u.Sequence, st.Seq, st.Seq)
	}
	next := configState{Seq: st.Seq + 1, MaxID: st.MaxID}
	for _, o := range u.Orderers {
		next.Peers = append(next.Peers, RaftPeer{ID: o.ID, Org: o.Org, Name: o.Name, Address: o.Address})
	}
	next.sort()
	cc, err := diff(st, next)
	if err != nil {
		return configChange{}, fmt.Errorf("%w: %s: %w", ErrConfigUpdate, id, err)
	}
	if cc.GetType() == pb.ConfChangeType_ConfChangeAddNode {
		if cc.GetNodeId() <= st.MaxID {
			return configChange{}, fmt.Errorf("%w: %s adds orderer id %d, but ids up to %d were used: want an id above %d",
				ErrConfigUpdate, id, cc.GetNodeId(), st.MaxID, st.MaxID)
		}
		next.MaxID = cc.GetNodeId()
	}
	if err := checkPolicy(reg, env); err != nil {
		return configChange{}, fmt.Errorf("%w: %s: %w", ErrConfigUpdate, id, err)
	}
	cc.Context = raw
	return configChange{raw: raw, id: id, cc: cc, next: next}, nil
}

// diff returns the Raft change from st to next: exactly one orderer
// added, or exactly one removed, the others unchanged (same org, name
// and address).
func diff(st, next configState) (*pb.ConfChange, error) {
	var added, removed []RaftPeer
	for _, p := range next.Peers {
		old, ok := st.peer(p.ID)
		switch {
		case !ok:
			added = append(added, p)
		case old != p:
			return nil, fmt.Errorf("orderer %d changes from %s/%s at %s to %s/%s at %s; an update may only add or remove one orderer",
				p.ID, old.Org, old.Name, old.Address, p.Org, p.Name, p.Address)
		}
	}
	for _, p := range st.Peers {
		if _, ok := next.peer(p.ID); !ok {
			removed = append(removed, p)
		}
	}
	switch {
	case len(added) == 1 && len(removed) == 0:
		for _, p := range st.Peers {
			if p.Org == added[0].Org && p.Name == added[0].Name {
				return nil, fmt.Errorf("adds orderer %s/%s as id %d, but it is already id %d", p.Org, p.Name, added[0].ID, p.ID)
			}
		}
		return &pb.ConfChange{Type: pb.ConfChangeType_ConfChangeAddNode.Enum(), NodeId: &added[0].ID}, nil
	case len(added) == 0 && len(removed) == 1:
		return &pb.ConfChange{Type: pb.ConfChangeType_ConfChangeRemoveNode.Enum(), NodeId: &removed[0].ID}, nil
	}
	return nil, fmt.Errorf("adds %d and removes %d orderers (the channel has %s); want exactly one added or one removed",
		len(added), len(removed), st.names())
}

// checkPolicy checks that admins of more than half of the registry's
// orgs signed the update (see the policy above).
func checkPolicy(reg *identity.Registry, env *api.ConfigEnvelope) error {
	return reg.AdminMajority(env.Update, env.Signatures)
}

// VerifyConfigEnvelope checks what a peer can check of a config block's
// update: its form, that it is for channel, and the policy (admins of a
// majority of the registry's orgs). It returns the update; the peer takes
// the orderer set from it. The sequence and the one-change rule are the
// orderers' to enforce (the block is signed by one of them).
func VerifyConfigEnvelope(reg *identity.Registry, channel string, raw []byte) (*api.ConfigUpdate, error) {
	env, u, err := api.DecodeConfigEnvelope(raw)
	if err != nil {
		return nil, err
	}
	if u.Channel != channel {
		return nil, fmt.Errorf("%w: %s is for channel %q, this is %q", ErrConfigUpdate, env.ID(), u.Channel, channel)
	}
	if err := checkPolicy(reg, env); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfigUpdate, env.ID(), err)
	}
	return u, nil
}
