package localnet

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

// channelID is what AddChannel accepts as a channel id: it names a file
// (channel-<id>.yaml), an orderer (orderer-<id>) and a data directory.
var channelID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$`)

// AddChannel adds channel id to a network that has not started yet (or
// whose peers have no ledger yet): a channel file channel-<id>.yaml with
// the network channel's orgs, peers, contracts and batch limits, ordered
// by an orderer of its own, orderer-<id> of OrdererOrg (new keys, free
// ports, in the layout, so that `net up` starts it); and every peer's
// node file then lists both channels under channels (node.NodeConfig.
// Channels), so each peer process serves them all. A peer that already
// has a single-channel ledger refuses to start with channels (its error
// says how to move the ledger). It returns the new orderer.
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
	name := "orderer-" + id
	if _, ok := l.Node(name); ok {
		return Node{}, fmt.Errorf("localnet: the network in %s already has a node %q", l.Dir, name)
	}
	ca, err := loadCA(l.Dir, OrdererOrg)
	if err != nil {
		return Node{}, err
	}
	ports, err := allocPorts(0, 2, l.usedPorts())
	if err != nil {
		return Node{}, err
	}
	file := filepath.Join(l.Dir, "channel-"+id+".yaml")
	g := &gen{dir: l.Dir, lay: l, metrics: ports[1:], channel: filepath.Base(file)}
	ep := node.EndpointConfig{Name: name, Address: "127.0.0.1:" + strconv.Itoa(ports[0])}
	if err := writeChannelLike(l.Channel, file, id, ep); err != nil {
		return Node{}, err
	}
	if err := g.node(ca, ep, name, identity.RoleOrderer, nil); err != nil {
		return Node{}, err
	}
	l.Channels = append(l.Channels, file)
	for _, n := range l.Nodes {
		if n.Role == identity.RolePeer {
			if err := addChannelTo(n.Config, file); err != nil {
				return Node{}, err
			}
		}
	}
	if err := l.Save(); err != nil {
		return Node{}, err
	}
	n, _ := l.Node(name)
	return n, nil
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

// writeChannelLike writes to file the channel file from, renamed id and
// with OrdererOrg's orderers replaced by ep. It edits the YAML tree, so
// every other field (and relative path) stays as it was.
func writeChannelLike(from, file, id string, ep node.EndpointConfig) error {
	var doc map[string]any
	if err := readYAMLMap(from, &doc); err != nil {
		return err
	}
	doc["channel"] = id
	orgs, _ := doc["orgs"].([]any)
	for _, o := range orgs {
		if m, ok := o.(map[string]any); ok && m["id"] == OrdererOrg {
			m["orderers"] = []any{map[string]any{"name": ep.Name, "address": ep.Address}}
		}
	}
	return writeYAMLMap(file, "Channel "+id+" of a local strand network, written by localnet.AddChannel.\n# Fields: docs/config.md.", doc)
}

// addChannelTo makes the peer node file at path list the channel file
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
	return writeYAMLMap(path, "Node file of a local strand network's peer, written by localnet (AddChannel added channels).\n# Paths are relative to this file. Fields: docs/config.md.", doc)
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
