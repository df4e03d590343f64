package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
)

// joinChannel serves channel ch from now on, and after restarts: its
// genesis document is written to the data directory first, then its
// ledger opened, routed and followed (blocks pulled from its orderers,
// from block 0 on).
func (p *Peer) joinChannel(ch *ChannelConfig) (*api.ChannelInfo, error) {
	p.joinMu.Lock()
	defer p.joinMu.Unlock()
	if _, ok := p.channels.find(ch.Channel); ok {
		return nil, fmt.Errorf("%w: this peer serves channel %q already", errChannelServed, ch.Channel)
	}
	if b := p.cfg.StateDB.Backend; b == backend.Memnode || b == backend.Redis {
		return nil, fmt.Errorf("%w: %s: stateDB.backend is %s, which keeps one channel's state: a peer with a memory node or Redis serves only the channel of its node file",
			errJoinRefused, p.cfg.file, b)
	}
	if err := p.cfg.CheckChannel(ch); err != nil {
		return nil, fmt.Errorf("%w: %w", errJoinRefused, err)
	}
	if p.channels.len() >= maxChannels {
		return nil, fmt.Errorf("%w: this peer serves %d channels, the most a node serves", errJoinRefused, maxChannels)
	}
	if err := p.cfg.writeJoined(ch); err != nil {
		return nil, err
	}
	share := p.cfg.KeyTableBytes() / int64(p.channels.len()+1)
	c, err := p.openChannel(p.cfg.forJoined(ch.Channel), ch, p.creds, share, true)
	if err == nil {
		p.channels.add(c) // before it is routed: a compute node's Join finds its pool
		if err = p.router.Add(c.routed()); err != nil {
			p.channels.remove(c)
		}
	}
	if err != nil {
		p.dropChannel(c)
		return nil, errors.Join(err, p.cfg.unwriteJoined(ch.Channel))
	}
	p.splitKeyTables()
	p.startFollow(c)
	return c.info(), nil
}

// leaveChannel stops serving channel id, joined at runtime, and deletes
// its ledger. Calls in flight on it end first (their waits cancelled);
// compute nodes in its pool are sent away.
func (p *Peer) leaveChannel(ctx context.Context, id string) (*api.ChannelInfo, error) {
	p.joinMu.Lock()
	defer p.joinMu.Unlock()
	c, ok := p.channels.find(id)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w %q: this peer serves channel(s) %v", errNotServed, id, p.Channels())
	case !c.joined:
		return nil, fmt.Errorf("%w: channel %q is in the node file %s: take it out there and restart the peer (its ledger stays in %s)",
			errLeaveRefused, id, p.cfg.file, p.cfg.channelDataDir(id))
	}
	info := c.info()
	// Without a deadline: every call on the channel ends by itself (an
	// endorsement within its timeouts) or has its wait cancelled by
	// Remove, and a leave given up halfway would leave the channel
	// neither routed nor closed.
	if err := p.router.Remove(context.WithoutCancel(ctx), id); err != nil {
		return nil, err
	}
	c.stopFollow()
	<-c.followed
	p.channels.remove(c)
	p.dropChannel(c)
	p.splitKeyTables()
	if err := p.cfg.removeJoined(id); err != nil {
		return nil, err
	}
	p.log.Info("left channel", "channel", id)
	return info, nil
}

// dropChannel closes channel c, which is not routed nor followed, and
// forgets its certificates.
func (p *Peer) dropChannel(c *peerChannel) {
	if err := c.close(); err != nil {
		p.log.Error("closing a channel", "channel", c.name, "err", err)
	}
	if c.reg != nil {
		p.removeRegistry(c.reg)
	}
	if c.trust != nil {
		p.setJoinedTrust(c.trust, false)
	}
}

// splitKeyTables gives each channel an even share of the node's
// key-table budget again.
func (p *Peer) splitKeyTables() {
	all := p.channels.list()
	for _, c := range all {
		c.reg.SetKeyTableLimit(p.cfg.KeyTableBytes() / int64(len(all)))
	}
}

// listChannels describes every channel the peer serves.
func (p *Peer) listChannels() []*api.ChannelInfo {
	var out []*api.ChannelInfo
	for _, c := range p.channels.list() {
		out = append(out, c.info())
	}
	return out
}

func (c *peerChannel) info() *api.ChannelInfo {
	return &api.ChannelInfo{Channel: c.name, Height: c.committer.Height(), Hash: c.hash, Joined: c.joined}
}
