package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/strand-ledger/strand/api"
)

// joinChannel orders channel ch from now on, and after restarts: its
// genesis document is written to the data directory first, then its
// ledger opened (block 0 written from the document) and routed. A channel
// with several orderers starts its Raft group as at a process start: its
// members elect a leader once a quorum of them has joined.
func (o *Orderer) joinChannel(ch *ChannelConfig) (*api.ChannelInfo, error) {
	o.joinMu.Lock()
	defer o.joinMu.Unlock()
	if _, ok := o.channels.find(ch.Channel); ok {
		return nil, fmt.Errorf("%w: this orderer orders channel %q already", errChannelServed, ch.Channel)
	}
	if err := o.cfg.CheckChannel(ch); err != nil {
		return nil, fmt.Errorf("%w: %w", errJoinRefused, err)
	}
	if o.channels.len() >= maxChannels {
		return nil, fmt.Errorf("%w: this orderer orders %d channels, the most a node serves", errJoinRefused, maxChannels)
	}
	batch := ch.OrdererBatch()
	batch.EnsureDefaults()
	if len(ch.Orderers()) > 1 && batch.MaxBytes > o.clusterMax {
		return nil, fmt.Errorf("%w: channel %q cuts blocks of up to %d bytes (batch.maxBytes), more than this orderer's cluster connections receive (%d, the largest of the channels it started with): "+
			"list the channel in the node file and restart the orderer", errJoinRefused, ch.Channel, batch.MaxBytes, o.clusterMax)
	}
	if err := o.cfg.writeJoined(ch); err != nil {
		return nil, err
	}
	share := o.cfg.KeyTableBytes() / int64(o.channels.len()+1)
	c, err := o.openChannel(o.cfg.forJoined(ch.Channel), ch, o.creds, o.conns, share, true)
	if err == nil {
		err = o.Channels.Add(c.ord)
	}
	if err != nil {
		o.dropChannel(c)
		return nil, errors.Join(err, o.cfg.unwriteJoined(ch.Channel))
	}
	o.channels.add(c)
	o.splitKeyTables()
	o.logChannel(c, "joined channel")
	return c.info(), nil
}

// leaveChannel stops ordering channel id, joined at runtime, and deletes
// its ledger and Raft log. Calls in flight on it end with the orderer's
// ErrClosed. The other orderers of a Raft channel see this member as
// unreachable: remove it from the channel with a config update first
// (strand channel update), or the group loses a member of its quorum.
func (o *Orderer) leaveChannel(_ context.Context, id string) (*api.ChannelInfo, error) {
	o.joinMu.Lock()
	defer o.joinMu.Unlock()
	c, ok := o.channels.find(id)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w %q: this orderer orders channel(s) %v", errNotServed, id, o.channels.ids())
	case !c.joined:
		return nil, fmt.Errorf("%w: channel %q is in the node file %s: take it out there and restart the orderer (its ledger stays in %s)",
			errLeaveRefused, id, o.cfg.file, o.cfg.channelDataDir(id))
	}
	info := c.info()
	if _, err := o.Channels.Remove(id); err != nil {
		return nil, err
	}
	o.channels.remove(c)
	o.dropChannel(c)
	o.splitKeyTables()
	if err := o.cfg.removeJoined(id); err != nil {
		return nil, err
	}
	o.log.Info("left channel", "channel", id)
	return info, nil
}

// dropChannel closes channel c, which is not routed, and forgets its
// certificates.
func (o *Orderer) dropChannel(c *ordererChannel) {
	if err := c.close(); err != nil {
		o.log.Error("closing a channel", "channel", c.name, "err", err)
	}
	if c.reg != nil {
		o.removeRegistry(c.reg)
	}
	if c.trust != nil {
		o.setJoinedTrust(c.trust, false)
	}
}

// splitKeyTables gives each channel an even share of the node's
// key-table budget again.
func (o *Orderer) splitKeyTables() {
	all := o.channels.list()
	for _, c := range all {
		c.reg.SetKeyTableLimit(o.cfg.KeyTableBytes() / int64(len(all)))
	}
}

func (o *Orderer) listChannels() []*api.ChannelInfo {
	var out []*api.ChannelInfo
	for _, c := range o.channels.list() {
		out = append(out, c.info())
	}
	return out
}

func (c *ordererChannel) info() *api.ChannelInfo {
	return &api.ChannelInfo{Channel: c.name, Height: c.ord.Height(), Hash: c.hash, Joined: c.joined}
}
