package node_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestFormatUpgrade: a chain keeps the transaction format it was created
// with. An orderer whose chain is format 1 refuses a channel file of
// format 2 (what an upgrade that drops the old file's implicit format
// gives) and says which format to set; set back, it starts.
func TestFormatUpgrade(t *testing.T) {
	lay, err := localnet.Generate(t.TempDir(), localnet.Spec{Orgs: 1})
	if err != nil {
		t.Fatal(err)
	}
	setFormat := func(f string) {
		t.Helper()
		raw, err := os.ReadFile(lay.Channel)
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(raw, []byte("format: "))
		if i < 0 {
			t.Fatalf("channel file has no format field:\n%s", raw)
		}
		raw[i+len("format: ")] = f[0]
		if err := os.WriteFile(lay.Channel, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var ordCfg string
	for _, nd := range lay.Nodes {
		if nd.Role == identity.RoleOrderer {
			ordCfg = nd.Config
		}
	}
	start := func() (*node.Orderer, error) {
		cfg, err := node.LoadNode(ordCfg)
		if err != nil {
			t.Fatal(err)
		}
		return node.StartOrderer(cfg)
	}
	setFormat("1")
	o, err := start()
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	setFormat("2")
	if o, err := start(); err == nil {
		o.Close()
		t.Fatal("a format 1 chain started under a format 2 channel file")
	} else if !strings.Contains(err.Error(), "created with transaction format 1") || !strings.Contains(err.Error(), "set format: 1") {
		t.Fatalf("error %v; want it to name format 1 and what to set", err)
	}
	setFormat("1")
	o, err = start()
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
}
