package node

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/strand-ledger/strand/ledger/statedb/backend"
)

// maxChannels bounds the channels one peer serves or one orderer orders.
const maxChannels = 256

// checkChannels checks channel and channels: exactly one of them, and
// channels without empty or repeated paths. That two files name the
// same channel id is found when they are read (LoadChannels).
func (n *NodeConfig) checkChannels(ck *checker) {
	switch {
	case n.Channel != "" && len(n.Channels) > 0:
		ck.bad("channels", n.Channels, "empty when channel is set: a node names either one channel file (channel) or several (channels), not both")
		return
	case len(n.Channels) == 0 && n.Channel == "":
		ck.bad("channel", n.Channel, "a path, relative to this file or absolute")
		return
	case len(n.Channels) > maxChannels:
		ck.bad("channels", len(n.Channels), fmt.Sprintf("at most %d channel files", maxChannels))
		return
	case len(n.Channels) > 0 && n.Join != "":
		ck.bad("join", n.Join, "empty with channels: a peer of an added org, or an orderer a config update adds, joins one channel, configured with channel")
	case len(n.Channels) > 1 && (n.StateDB.Backend == backend.Memnode || n.StateDB.Backend == backend.Redis):
		ck.bad("stateDB.backend", n.StateDB.Backend, "a local backend with several channels: a memory node or Redis database keeps one channel's state, and channels share nothing")
	}
	seen := map[string]int{}
	for i, p := range n.Channels {
		if p == "" {
			ck.bad(fmt.Sprintf("channels[%d]", i), p, "a path, relative to this file or absolute")
			continue
		}
		if j, ok := seen[filepath.Clean(p)]; ok {
			ck.bad(fmt.Sprintf("channels[%d]", i), p, fmt.Sprintf("a channel file not listed before (channels[%d] is the same file)", j))
		}
		seen[filepath.Clean(p)] = i
	}
}

// ChannelFiles are the paths of the node's channel files: Channels, or
// Channel alone.
func (n *NodeConfig) ChannelFiles() []string {
	if len(n.Channels) > 0 {
		return n.Channels
	}
	return []string{n.Channel}
}

// LoadChannels reads every channel file of the node, in the order of the
// config, and checks that no two name the same channel.
func (n *NodeConfig) LoadChannels() ([]*ChannelConfig, error) {
	files := n.ChannelFiles()
	chs := make([]*ChannelConfig, len(files))
	byID := map[string]string{}
	for i, f := range files {
		ch, err := LoadChannel(f)
		if err != nil {
			return nil, err
		}
		if other, ok := byID[ch.Channel]; ok {
			return nil, fmt.Errorf("%w: %s: channels: %s and %s both define channel %q; list each channel once", ErrConfig, n.file, other, f, ch.Channel)
		}
		byID[ch.Channel] = f
		chs[i] = ch
	}
	return chs, nil
}

// channelDataDir is where the node keeps channel id's ledger (its block
// store and state): DataDir/channels/<id> when the node is configured with
// Channels, DataDir itself with Channel (the layout before peers served
// several channels, which existing data directories keep).
func (n *NodeConfig) channelDataDir(id string) string {
	if len(n.Channels) == 0 {
		return n.DataDir
	}
	return filepath.Join(n.DataDir, "channels", id)
}

// forChannel is a copy of n for one of its channels: Channel is that
// channel's file and DataDir its data directory, so that the code that
// opens one channel's ledger reads the copy as a single-channel node's
// config.
func (n *NodeConfig) forChannel(file, id string) *NodeConfig {
	c := *n
	c.Channel, c.Channels, c.DataDir = file, nil, n.channelDataDir(id)
	return &c
}

// checkLayout refuses a data directory that holds a single-channel
// ledger (DataDir/blocks) when the node is configured with Channels,
// whose ledgers live in DataDir/channels/<id>: starting would leave that
// ledger unread and begin another from the genesis block.
func (n *NodeConfig) checkLayout(chs []*ChannelConfig) error {
	if len(n.Channels) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(n.DataDir, "blocks")); err == nil {
		return fmt.Errorf("%w: %s: dataDir %s holds the ledger of a node configured with one channel (blocks/, and state/ or raft/); "+
			"with channels each channel's ledger is in channels/<channel id>/: move blocks/ and state/ (a peer's) or raft/ (an orderer's) into channels/%s/ "+
			"(the id of that ledger's channel), or configure channel instead of channels", ErrConfig, n.file, n.DataDir, chs[0].Channel)
	}
	return nil
}
