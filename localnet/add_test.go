package localnet

import (
	"testing"

	"github.com/strand-ledger/strand/node"
)

// TestAddOrgStateDB: an added org's peer keeps its state in the
// network's peers' backend, or the default where they use memory nodes
// (AddOrg starts none).
func TestAddOrgStateDB(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Orgs: 2, Orderers: 1, StateDB: "leveldb"}, "leveldb"},
		{Spec{Orgs: 2, Orderers: 1}, "pebble"},
		{Spec{Orgs: 2, Orderers: 1, Memnodes: true}, "pebble"},
	} {
		l, err := Generate(t.TempDir(), c.spec)
		if err != nil {
			t.Fatal(err)
		}
		p, _, _, err := AddOrg(l, "Org3")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := node.LoadNode(p.Config)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.StateDB.Backend != c.want {
			t.Errorf("spec %+v: peer0.Org3's backend %q, want %q", c.spec, cfg.StateDB.Backend, c.want)
		}
	}
}
