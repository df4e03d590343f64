package orderer

import (
	"crypto/tls"
	"fmt"
	"time"
)

// Defaults of RaftConfig.
const (
	DefaultTickInterval    = 100 * time.Millisecond
	DefaultElectionTicks   = 10
	DefaultHeartbeatTicks  = 1
	DefaultSnapshotEntries = 1000
	DefaultKeepEntries     = 500
	DefaultMaxSizePerMsg   = 1 << 20
	DefaultMaxInflight     = 256
)

// RaftPeer is one orderer of the channel's Raft cluster.
type RaftPeer struct {
	// ID is the Raft node id, unique and not 0. It must never be reused
	// for another orderer.
	ID uint64
	// Org and Name are the orderer's org and certificate CN: its TLS
	// client certificate must be an orderer-role certificate of Org (by
	// the channel Registry) with CN Name, or its messages are refused.
	Org, Name string
	// Address is host:port of its gRPC server (Submit, Deliver and the
	// Cluster service).
	Address string
}

// RaftConfig turns an Orderer into a member of a Raft cluster (see
// "Raft" in the package documentation). Zero fields take their defaults.
type RaftConfig struct {
	// ID is this orderer's id; Peers must hold it.
	ID uint64
	// Peers are every orderer of the channel, this one included, the
	// same list (any order) on every member.
	Peers []RaftPeer
	// Join, set when a config update has added this orderer to a running
	// cluster, is the orderer set of that update (this orderer's ID among
	// them). With Join set the member never bootstraps: its log stays
	// empty until the leader sends it entries or a snapshot, and it dials
	// these orderers. Peers stays the channel's genesis orderer set, from
	// which every member's config state starts.
	Join []RaftPeer
	// Dir holds the Raft log (package raftlog); it must not be shared.
	Dir string
	// ClientTLS is used to dial the other orderers: it must present this
	// orderer's TLS certificate and trust the channel's CAs.
	ClientTLS *tls.Config
	// Conns, if set, are the process's connections to the other
	// orderers, shared with its other channels (one per address); then
	// ClientTLS is not used. Nil: this member dials its own, with
	// ClientTLS.
	Conns *ClusterConns
	// TickInterval is one Raft tick. Default 100 ms.
	TickInterval time.Duration
	// ElectionTicks is the election timeout in ticks (default 10) and
	// HeartbeatTicks the heartbeat interval (default 1); ElectionTicks
	// must exceed HeartbeatTicks.
	ElectionTicks, HeartbeatTicks int
	// SnapshotEntries: after this many applied entries (and their blocks
	// durable) the node snapshots and compacts its log. Default 1000.
	SnapshotEntries uint64
	// KeepEntries stay in the log behind a snapshot so that a slightly
	// lagging follower gets entries, not a snapshot. Default 500.
	KeepEntries uint64
	// MaxSizePerMsg bounds the entries' bytes per append message (default
	// 1 MiB); MaxInflight the append messages in flight per follower
	// (default 256).
	MaxSizePerMsg uint64
	MaxInflight   int
}

// EnsureDefaults fills in zero fields with their defaults.
func (c *RaftConfig) EnsureDefaults() {
	if c.TickInterval == 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = DefaultElectionTicks
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = DefaultHeartbeatTicks
	}
	if c.SnapshotEntries == 0 {
		c.SnapshotEntries = DefaultSnapshotEntries
	}
	if c.KeepEntries == 0 {
		c.KeepEntries = DefaultKeepEntries
	}
	if c.MaxSizePerMsg == 0 {
		c.MaxSizePerMsg = DefaultMaxSizePerMsg
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = DefaultMaxInflight
	}
}

// Validate reports the first invalid field, naming its value and what is
// allowed.
func (c *RaftConfig) Validate() error {
	switch {
	case c.ID == 0:
		return fmt.Errorf("%w: RaftConfig.ID is 0, want this orderer's Raft id (one of Peers)", ErrBadConfig)
	case c.Dir == "":
		return fmt.Errorf("%w: RaftConfig.Dir is empty, want a directory for the Raft log", ErrBadConfig)
	case c.ClientTLS == nil && c.Conns == nil && len(c.Peers) > 1:
		return fmt.Errorf("%w: RaftConfig.ClientTLS is nil, want the TLS config to dial the other orderers", ErrBadConfig)
	case c.TickInterval <= 0:
		return fmt.Errorf("%w: RaftConfig.TickInterval is %s, want more than 0", ErrBadConfig, c.TickInterval)
	case c.HeartbeatTicks < 1 || c.ElectionTicks <= c.HeartbeatTicks:
		return fmt.Errorf("%w: RaftConfig.ElectionTicks %d and HeartbeatTicks %d, want 1 <= heartbeat < election",
			ErrBadConfig, c.ElectionTicks, c.HeartbeatTicks)
	case c.MaxInflight < 1:
		return fmt.Errorf("%w: RaftConfig.MaxInflight is %d, want at least 1", ErrBadConfig, c.MaxInflight)
	}
	if err := checkPeers("Peers", c.Peers, c.ID); err != nil {
		return err
	}
	if c.Join != nil {
		if err := checkPeers("Join", c.Join, c.ID); err != nil {
			return err
		}
		if _, ok := c.joinPeer(c.ID); !ok {
			return fmt.Errorf("%w: RaftConfig.ID %d is not among the %d orderers of Join", ErrBadConfig, c.ID, len(c.Join))
		}
		return nil
	}
	if _, ok := c.peer(c.ID); !ok {
		return fmt.Errorf("%w: RaftConfig.ID %d is not among the %d Peers", ErrBadConfig, c.ID, len(c.Peers))
	}
	return nil
}

// checkPeers checks a list of orderers (field names the RaftConfig field).
func checkPeers(field string, peers []RaftPeer, self uint64) error {
	ids := map[uint64]bool{}
	names := map[string]bool{}
	for i, p := range peers {
		key := p.Org + "/" + p.Name
		switch {
		case p.ID == 0:
			return fmt.Errorf("%w: RaftConfig.%s[%d] (%s) has ID 0, want a unique non-zero id", ErrBadConfig, field, i, key)
		case ids[p.ID]:
			return fmt.Errorf("%w: RaftConfig.%s[%d] (%s) repeats ID %d", ErrBadConfig, field, i, key, p.ID)
		case p.Org == "" || p.Name == "":
			return fmt.Errorf("%w: RaftConfig.%s[%d] (ID %d) has org %q and name %q, want both", ErrBadConfig, field, i, p.ID, p.Org, p.Name)
		case names[key]:
			return fmt.Errorf("%w: RaftConfig.%s[%d] repeats orderer %s", ErrBadConfig, field, i, key)
		case p.Address == "" && p.ID != self:
			return fmt.Errorf("%w: RaftConfig.%s[%d] (%s) has no Address, want host:port", ErrBadConfig, field, i, key)
		}
		ids[p.ID], names[key] = true, true
	}
	return nil
}

// joinPeer returns the orderer of Join with id.
func (c *RaftConfig) joinPeer(id uint64) (RaftPeer, bool) {
	for _, p := range c.Join {
		if p.ID == id {
			return p, true
		}
	}
	return RaftPeer{}, false
}

// peer returns the peer with id.
func (c *RaftConfig) peer(id uint64) (RaftPeer, bool) {
	for _, p := range c.Peers {
		if p.ID == id {
			return p, true
		}
	}
	return RaftPeer{}, false
}
