package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

// TestCheckJoinOrg: a peer not in the channel file starts only with a
// join file holding a membership update of its channel that adds its
// org, which is not a genesis org; each other case is ErrConfig, named.
func TestCheckJoinOrg(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, u *api.MembersUpdate) string {
		raw, err := api.EncodeMembersUpdate(u)
		if err != nil {
			t.Fatal(err)
		}
		env, err := api.EncodeMembers(&api.ConfigEnvelope{Update: raw})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, env, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	add := func(id string) []api.MembersOrg {
		c, err := identity.NewCA(id, identity.ECDSAP256)
		if err != nil {
			t.Fatal(err)
		}
		ca := c.CertDER()
		return []api.MembersOrg{{ID: id, CACerts: [][]byte{ca}, TLSCACerts: [][]byte{ca}}}
	}
	ch := &ChannelConfig{Channel: "ch", Orgs: []OrgConfig{{ID: "Org1", Peers: []EndpointConfig{{Name: "peer0.Org1"}}}}}
	for _, c := range []struct {
		name, org, join, want string
	}{
		{"adds the org", "Org3", write("ok", &api.MembersUpdate{Channel: "ch", Add: add("Org3")}), ""},
		{"another org", "Org3", write("other", &api.MembersUpdate{Channel: "ch", Add: add("Org4")}), "does not add org Org3"},
		{"another channel", "Org3", write("chan", &api.MembersUpdate{Channel: "x", Add: add("Org3")}), `updates channel "x"`},
		{"a genesis org", "Org1", write("gen", &api.MembersUpdate{Channel: "ch", Add: add("Org1")}), "is a genesis org"},
		{"not an update", "Org3", write("bad", &api.MembersUpdate{Channel: "ch"}), "carries no CRL, add or remove"},
		{"no file", "Org3", filepath.Join(dir, "missing"), "no such file"},
	} {
		n := &NodeConfig{Role: "peer", Name: "peer9." + c.org, Org: c.org, Join: c.join}
		err := n.CheckChannel(ch)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrConfig naming %q", c.name, err, c.want)
		}
	}
	d, err := (&NodeConfig{Role: "peer", Name: "peer9.Org3", Org: "Org3", Join: filepath.Join(dir, "ok")}).JoinOrg(ch)
	if err != nil || d.ID != "Org3" {
		t.Fatalf("JoinOrg: %v, %+v", err, d)
	}
	if err := (&NodeConfig{Role: "peer", Name: "peer0.Org3", Org: "Org3"}).CheckChannel(ch); err == nil {
		t.Errorf("a peer outside the channel file without join started")
	}
}
