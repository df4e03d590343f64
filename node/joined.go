package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A channel joined while the node runs (ChannelAdmin.Join) keeps its
// ledger in dataDir/channels/<id>/, as the channels of a node file's
// channels list do, and its genesis document beside it in genesis.json:
// that file is what makes the node serve the channel again when it
// restarts. It is written (and synced) before the ledger is opened, so a
// node killed during a join serves the channel after its restart, and
// taken away first when the node leaves the channel: the directory is
// renamed to channels/.left-<id>-<time> in one step, then deleted; a
// node that finds such a directory at start deletes it.
const (
	joinedGenesisFile = "genesis.json"
	leftPrefix        = ".left-"
)

// joinedDir is where the node keeps the ledger of channel id, joined at
// runtime.
func (n *NodeConfig) joinedDir(id string) string {
	return filepath.Join(n.DataDir, "channels", id)
}

// forJoined is the node's config for channel id joined at runtime, as
// forChannel is for a channel of the node file.
func (n *NodeConfig) forJoined(id string) *NodeConfig {
	c := *n
	c.Channel, c.Channels, c.Join = filepath.Join(n.joinedDir(id), joinedGenesisFile), nil, ""
	c.DataDir = n.joinedDir(id)
	return &c
}

// JoinedChannels are the channels the node joined at runtime and has not
// left, sorted by id, leaving out those configured (the node file's
// channels, by id: the node file wins). It deletes what leaves
// interrupted.
func (n *NodeConfig) JoinedChannels(configured []*ChannelConfig) ([]*ChannelConfig, error) {
	root := filepath.Join(n.DataDir, "channels")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("node: %s: reading the joined channels: %w", n.file, err)
	}
	var out []*ChannelConfig
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), leftPrefix) {
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				return nil, fmt.Errorf("node: deleting the ledger of a channel left before a restart: %w", err)
			}
			continue
		}
		if !e.IsDir() || slices.ContainsFunc(configured, func(c *ChannelConfig) bool { return c.Channel == e.Name() }) {
			continue
		}
		path := filepath.Join(root, e.Name(), joinedGenesisFile)
		doc, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a ledger of a channel the node file once listed
		}
		if err != nil {
			return nil, fmt.Errorf("node: joined channel %s: %w", e.Name(), err)
		}
		ch, err := ChannelFromGenesis(doc, path)
		if err != nil {
			return nil, err
		}
		if ch.Channel != e.Name() {
			return nil, fmt.Errorf("%w: %s defines channel %q, not the channel %q its directory names", ErrConfig, path, ch.Channel, e.Name())
		}
		out = append(out, ch)
	}
	return out, nil
}

// writeJoined writes channel ch's genesis document into its directory,
// durably: after it returns, the node serves the channel after a
// restart.
func (n *NodeConfig) writeJoined(ch *ChannelConfig) error {
	dir := n.joinedDir(ch.Channel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("node: joining channel %s: %w", ch.Channel, err)
	}
	if err := writeFileSync(filepath.Join(dir, joinedGenesisFile), ch.Genesis()); err != nil {
		return fmt.Errorf("node: joining channel %s: %w", ch.Channel, err)
	}
	return nil
}

// unwriteJoined takes channel id's genesis document away (a join that
// failed after writeJoined): the node will not serve it after a restart.
func (n *NodeConfig) unwriteJoined(id string) error {
	err := os.Remove(filepath.Join(n.joinedDir(id), joinedGenesisFile))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return syncDir(n.joinedDir(id))
	}
	return err
}

// removeJoined deletes channel id's directory: first renamed aside (one
// step, synced), so that a node killed meanwhile does not serve the
// channel again, then deleted.
func (n *NodeConfig) removeJoined(id string) error {
	root := filepath.Join(n.DataDir, "channels")
	aside := filepath.Join(root, leftPrefix+id+"-"+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.Rename(n.joinedDir(id), aside); err != nil {
		return fmt.Errorf("node: leaving channel %s: %w", id, err)
	}
	if err := syncDir(root); err != nil {
		return fmt.Errorf("node: leaving channel %s: %w", id, err)
	}
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("node: leaving channel %s: deleting its ledger: %w", id, err)
	}
	return nil
}

// writeFileSync writes data to path through a synced temporary file
// renamed over it, then syncs the directory.
func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
