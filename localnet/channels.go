package localnet

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

// channelID is what AddChannel accepts as a channel id: it names a file
// (channel-<id>.yaml) and a data directory.
var channelID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$`)

// AddChannel adds channel id to a network that has not started yet (or
// whose nodes have no ledger yet): a channel file channel-<id>.yaml with
// the network channel's orgs, peers, orderers, contracts and batch
// limits; every peer's and every orderer's node file then lists both
// channels under channels (node.NodeConfig.Channels), so each peer
// process serves them all and the network's orderers (one Raft cluster,
// if more than one) order them all, each channel its own Raft group. A
// node that already has a single-channel ledger refuses to start with
// channels (its error says how to move the ledger). It returns the
// channel's first orderer.
func AddChannel(l *Layout, id string) (Node, error) {
	if !channelID.MatchString(id) {
		return Node{}, fmt.Errorf("localnet: bad channel id %q: want a letter or digit, then up to 47 letters, digits, '-' or '_'", id)
	}
	base, err := node.LoadChannel(l.Channel)
	if err != nil {
		return Node{}, err
	}
	if base.Channel == id || slices.ContainsFunc(l.Channels, func(f string) bool { return filepath.Base(f) == "channel-"+id+".yaml" }) {
		return Node{}, fmt.Errorf("localnet: the network in %s already has channel %q", l.Dir, id)
	}
	eps := base.Orderers()
	if len(eps) == 0 {
		return Node{}, fmt.Errorf("localnet: channel %q in %s has no orderer", base.Channel, l.Channel)
	}
	first, ok := l.Node(eps[0].Name)
	if !ok {
		return Node{}, fmt.Errorf("localnet: orderer %q of channel %q is not a node of the network in %s", eps[0].Name, base.Channel, l.Dir)
	}
	file := filepath.Join(l.Dir, "channel-"+id+".yaml")
	if err := writeChannelLike(l.Channel, file, id); err != nil {
		return Node{}, err
	}
	l.Channels = append(l.Channels, file)
	orders := map[string]bool{}
	for _, ep := range eps {
		orders[ep.Name] = true
	}
	for _, n := range l.Nodes {
		// An orderer a config update added (its node file joins the
		// network's channel) orders that channel only.
		if n.Role == identity.RolePeer || (n.Role == identity.RoleOrderer && orders[n.Name]) {
			if err := addChannelTo(n.Config, file); err != nil {
				return Node{}, err
			}
		}
	}
	if err := l.Save(); err != nil {
		return Node{}, err
	}
	return first, nil
}

// CreateChannel writes the channel file of a new channel id for a running
// network, channel-<id>.yaml, with the network channel's orgs, peers,
// orderers, contracts and batch limits, and returns its path. Unlike
// AddChannel it lists the channel in no node file: the nodes join it
// while they run (strand channel join, node.ChannelFromGenesis).
func CreateChannel(l *Layout, id string) (string, error) {
	if !channelID.MatchString(id) {
		return "", fmt.Errorf("localnet: bad channel id %q: want a letter or digit, then up to 47 letters, digits, '-' or '_'", id)
	}
	base, err := node.LoadChannel(l.Channel)
	if err != nil {
		return "", err
	}
	file := filepath.Join(l.Dir, "channel-"+id+".yaml")
	if _, err := os.Stat(file); base.Channel == id || err == nil {
		return "", fmt.Errorf("localnet: the network in %s already has channel %q (%s)", l.Dir, id, file)
	}
	if err := writeChannelLike(l.Channel, file, id); err != nil {
		return "", err
	}
	return file, nil
}

// loadCA reads the CA of org from crypto/<org>/ (ca.pem, ca-key.pem).
func loadCA(dir, org string) (*identity.CA, error) {
	d := filepath.Join(dir, "crypto", org)
	certPEM, err := os.ReadFile(filepath.Join(d, "ca.pem"))
	if err != nil {
		return nil, fmt.Errorf("localnet: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(d, "ca-key.pem"))
	if err != nil {
		return nil, fmt.Errorf("localnet: %w", err)
	}
	ca, err := identity.LoadCA(org, certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("localnet: %w", err)
	}
	return ca, nil
}

// writeChannelLike writes to file the channel file from, renamed id. It
// edits the YAML tree, so every other field (and relative path) stays as
// it was: the same orgs, peers and orderers.
func writeChannelLike(from, file, id string) error {
	var doc map[string]any
	if err := readYAMLMap(from, &doc); err != nil {
		return err
	}
	doc["channel"] = id
	return writeYAMLMap(file, "Channel "+id+" of a local strand network, written by localnet.AddChannel.\n# Fields: docs/config.md.", doc)
}

// addChannelTo makes the node file at path list the channel file
// (the network's directory holds both): channel becomes channels.
func addChannelTo(path, channelFile string) error {
	var doc map[string]any
	if err := readYAMLMap(path, &doc); err != nil {
		return err
	}
	rel := filepath.Join("..", filepath.Base(channelFile))
	list, _ := doc["channels"].([]any)
	if one, ok := doc["channel"].(string); ok && one != "" {
		list = append(list, one)
	}
	delete(doc, "channel")
	doc["channels"] = append(list, rel)
	return writeYAMLMap(path, "Node file of a local strand network's "+fmt.Sprint(doc["role"])+", written by localnet (AddChannel added channels).\n# Paths are relative to this file. Fields: docs/config.md.", doc)
}

func readYAMLMap(path string, doc *map[string]any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("localnet: %w", err)
	}
	if err := yaml.Unmarshal(raw, doc); err != nil {
		return fmt.Errorf("localnet: %s: %w", path, err)
	}
	return nil
}

func writeYAMLMap(path, head string, doc map[string]any) error {
	return (&gen{}).writeYAML(path, head, doc)
}
