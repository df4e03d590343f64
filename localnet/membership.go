package localnet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

// MembershipFile is the name of the file, in a network's directory, that
// records the channel's orderer set as of the latest config update the
// CLI saw applied (`strand channel update`). Without it the channel file's
// orderers are the members.
const MembershipFile = "orderers.json"

// Membership is MembershipFile's content: the channel's current orderers
// and those a config update removed (and none re-added), by name.
type Membership struct {
	// Sequence is the channel config sequence this set is as of.
	Sequence uint64   `json:"sequence"`
	Orderers []string `json:"orderers"`
	Removed  []string `json:"removed,omitempty"`
}

// loadMembership reads dir's MembershipFile; nil when there is none.
func loadMembership(dir string) (*Membership, error) {
	path := filepath.Join(dir, MembershipFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("localnet: %w", err)
	}
	var m Membership
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("localnet: %s: %w", path, err)
	}
	return &m, nil
}

// next returns the membership after a config update of sequence seq left
// the channel with orderers: every member before that is not one now is
// removed; one named again is no longer removed. prev nil is the channel
// file's set, initial.
func (prev *Membership) next(initial []string, seq uint64, orderers []string) Membership {
	old, removed := initial, []string(nil)
	if prev != nil {
		old, removed = prev.Orderers, slices.Clone(prev.Removed)
	}
	for _, o := range old {
		if !slices.Contains(orderers, o) && !slices.Contains(removed, o) {
			removed = append(removed, o)
		}
	}
	removed = slices.DeleteFunc(removed, func(o string) bool { return slices.Contains(orderers, o) })
	return Membership{Sequence: seq, Orderers: slices.Clone(orderers), Removed: removed}
}

// RecordOrderers records that the channel's config, at sequence seq, has
// the orderers named (in MembershipFile and l.Membership). A record of a
// later sequence is kept, and an empty set (a single-node orderer, no
// Raft membership) is not recorded: the call is then a no-op.
func (l *Layout) RecordOrderers(seq uint64, orderers []string) error {
	if len(orderers) == 0 || l.Membership != nil && l.Membership.Sequence > seq {
		return nil
	}
	initial, err := l.channelOrderers()
	if err != nil {
		return err
	}
	m := l.Membership.next(initial, seq, orderers)
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("localnet: %w", err)
	}
	g := &gen{dir: l.Dir}
	if err := g.write(filepath.Join(l.Dir, MembershipFile), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	l.Membership = &m
	return nil
}

// channelOrderers returns the names of the orderers of the channel file.
func (l *Layout) channelOrderers() ([]string, error) {
	ch, err := node.LoadChannel(l.Channel)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ep := range ch.Orderers() {
		names = append(names, ep.Name)
	}
	return names, nil
}

// Removed reports whether a config update removed orderer name from the
// channel (as recorded in MembershipFile).
func (l *Layout) Removed(name string) bool {
	return l.Membership != nil && slices.Contains(l.Membership.Removed, name)
}

// Members returns the names of the channel's current orderers: those of
// the latest recorded config update, else those of the channel file.
func (l *Layout) Members() ([]string, error) {
	if l.Membership != nil {
		return l.Membership.Orderers, nil
	}
	return l.channelOrderers()
}

// Orderer returns the orderer node called name to ask for the channel's
// service, the first current member that is in the network if name is
// empty. An orderer the channel removed is an error that says so and
// names a current member: it no longer orders, and whatever it answers is
// stale.
func (l *Layout) Orderer(name string) (Node, error) {
	members, err := l.Members()
	if err != nil {
		return Node{}, err
	}
	var here []string
	for _, m := range members {
		if n, ok := l.Node(m); ok && n.Role == identity.RoleOrderer {
			here = append(here, m)
		}
	}
	if name == "" {
		if len(here) == 0 {
			return Node{}, fmt.Errorf("localnet: none of the channel's orderers (%s) is in the network in %s", strings.Join(members, ", "), l.Dir)
		}
		name = here[0]
	}
	n, ok := l.Node(name)
	switch {
	case !ok:
		return n, fmt.Errorf("--at %q: no such node in the network in %s", name, l.Dir)
	case n.Role != identity.RoleOrderer:
		return n, fmt.Errorf("--at %q: a %s, not an orderer", name, n.Role)
	case l.Removed(name):
		return n, fmt.Errorf("--at %s: orderer %s was removed from the channel (config sequence %d); its orderers are %s: use --at %s",
			name, name, l.Membership.Sequence, strings.Join(members, ", "), firstOr(here, "one of them"))
	}
	return n, nil
}

func firstOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return s[0]
}
