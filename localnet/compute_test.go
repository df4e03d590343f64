package localnet

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/node"
)

// TestComputeLayout: Spec.Compute gives every peer compute nodes whose
// files load; the layout keeps them across Load; AddCompute takes the
// lowest free number and RemoveCompute deletes a node and its files; and
// both refuse a peer without a memory node.
func TestComputeLayout(t *testing.T) {
	dir := t.TempDir()
	lay, err := Generate(dir, Spec{Orgs: 1, Memnodes: true, Compute: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := lay.ComputesOf("peer0.Org1"); len(got) != 2 || got[1].Name != "compute1.peer0.Org1" || got[1].Kind() != ComputeKind {
		t.Fatalf("compute nodes of peer0.Org1: %+v", got)
	}
	cfg, err := node.LoadCompute(lay.Computes[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Primary != "peer0.Org1" || cfg.Memnode.Address != lay.Memnodes[0].Address || cfg.Memnode.CacheMB != 0 {
		t.Fatalf("compute0's file: %+v; want primary peer0.Org1 on its memory node, the default cache (0: 64 MiB following the feed)", cfg)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Computes, lay.Computes) {
		t.Fatalf("loaded back %+v, want %+v", back.Computes, lay.Computes)
	}
	if _, err := RemoveCompute(back, "compute0.peer0.Org1", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lay.Computes[0].Config); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("compute0's file after removal: %v", err)
	}
	added, err := AddCompute(back, "peer0.Org1")
	if err != nil || added.Name != "compute0.peer0.Org1" || len(back.ComputesOf("peer0.Org1")) != 2 {
		t.Fatalf("AddCompute: %+v, %v; want compute0 again, two in all", added, err)
	}
	if _, err := AddCompute(back, "orderer0"); err == nil || !strings.Contains(err.Error(), `"orderer0" is not a peer`) {
		t.Fatalf("AddCompute(orderer0): %v", err)
	}

	if _, err := Generate(t.TempDir(), Spec{Orgs: 1, Compute: 1}); !errors.Is(err, ErrNoMemnode) {
		t.Fatalf("Spec.Compute without Memnodes: %v, want ErrNoMemnode", err)
	}
	plain, err := Generate(t.TempDir(), Spec{Orgs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddCompute(plain, "peer0.Org1"); !errors.Is(err, ErrNoMemnode) || !strings.Contains(err.Error(), "--memnodes") {
		t.Fatalf("AddCompute without a memory node: %v, want ErrNoMemnode saying --memnodes", err)
	}
}
