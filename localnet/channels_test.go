package localnet

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

// TestAddChannel: the added channel file names the new channel and the
// network's own orderers (no orderer of its own), every peer's and
// orderer's node file lists both channels (and loads), the layout keeps
// it across Load, and bad or repeated ids are refused.
func TestAddChannel(t *testing.T) {
	l, err := Generate(t.TempDir(), Spec{Orgs: 2, Orderers: 3})
	if err != nil {
		t.Fatal(err)
	}
	nodes := len(l.Nodes)
	o, err := AddChannel(l, "two")
	if err != nil {
		t.Fatal(err)
	}
	if o.Name != "orderer0" || o.Role != identity.RoleOrderer || len(l.Nodes) != nodes {
		t.Errorf("AddChannel returned %+v and made %d nodes of %d, want orderer0 and no new node", o, len(l.Nodes), nodes)
	}
	ch, err := node.LoadChannel(filepath.Join(l.Dir, "channel-two.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := node.LoadChannel(l.Channel)
	if err != nil {
		t.Fatal(err)
	}
	if eps := ch.Orderers(); ch.Channel != "two" || !slices.Equal(eps, base.Orderers()) {
		t.Errorf("channel %q ordered by %v, want two by the network's orderers %v", ch.Channel, eps, base.Orderers())
	}
	for _, n := range l.Nodes {
		cfg, err := node.LoadNode(n.Config)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{l.Channel, filepath.Join(l.Dir, "channel-two.yaml")}; !slices.Equal(cfg.Channels, want) || cfg.Channel != "" {
			t.Errorf("%s: channel %q, channels %v, want channels %v", n.Name, cfg.Channel, cfg.Channels, want)
		}
	}
	back, err := Load(l.Dir)
	if err != nil || !slices.Equal(back.Channels, l.Channels) {
		t.Errorf("reloaded layout: channels %v, %v; want %v", back.Channels, err, l.Channels)
	}
	for _, tc := range []struct{ id, want string }{
		{"two", `already has channel "two"`},
		{"demo", `already has channel "demo"`},
		{"a/b", "bad channel id"},
		{"", "bad channel id"},
	} {
		if _, err := AddChannel(l, tc.id); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AddChannel(%q): %v, want %q", tc.id, err, tc.want)
		}
	}
}
