package localnet

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/node"
)

func TestLayoutSaveLoad(t *testing.T) {
	dir := t.TempDir()
	lay, err := Generate(dir, Spec{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, lay) {
		t.Fatalf("loaded layout differs:\n%+v\n%+v", got, lay)
	}
	if orgs := got.Orgs(); !reflect.DeepEqual(orgs, []string{"Org1", "Org2"}) {
		t.Errorf("orgs %v", orgs)
	}
	if _, err := got.Peer("Org7"); err == nil {
		t.Error("Peer(Org7) succeeded")
	} else {
		t.Log(err)
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("Load of an empty directory succeeded")
	}
	// The layout file itself is a connection profile: the same layout,
	// its paths relative to the file's directory.
	prof, err := Load(filepath.Join(dir, LayoutFile))
	if err != nil || !reflect.DeepEqual(prof, lay) {
		t.Fatalf("Load of the layout file: %v\n%+v\nwant %+v", err, prof, lay)
	}
	bad := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(bad, []byte(`{"channel": "c.yaml", "nodes": [{"name": "p", "role": "peer", "adress": "x"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), `unknown field "adress"`) || !strings.Contains(err.Error(), "profile.json") {
		t.Errorf("a profile with a misspelt field: %v, want an error naming the file and the field", err)
	}
}

// TestDownSparesReusedPID records this test process's PID as a node's:
// Down must not signal it (its command line is no node's), and must drop
// the stale PID file.
func TestDownSparesReusedPID(t *testing.T) {
	lay, err := Generate(t.TempDir(), Spec{})
	if err != nil {
		t.Fatal(err)
	}
	n := lay.Nodes[0]
	pidFile := lay.PIDFile(n.Name)
	if err := os.MkdirAll(filepath.Dir(pidFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	if st := Status(lay); st[0].PID != os.Getpid() || st[0].Alive || st[0].Reachable {
		t.Fatalf("status %+v: want the PID recorded, not alive, not reachable", st[0])
	}
	procs, err := Down(lay, DownOptions{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if procs[0].Alive {
		t.Errorf("Down took this process for %s", n.Name)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("stale PID file %s left: %v", pidFile, err)
	}
}

func TestIsNodeProcess(t *testing.T) {
	n := Node{Name: "peer0.Org1", Config: "/x/nodes/peer0.Org1.yaml"}
	if isNodeProcess(os.Getpid(), n) {
		t.Error("this test process taken for a node")
	}
	if isNodeProcess(1<<30, n) {
		t.Error("a PID that does not exist taken for a node")
	}
}

// TestStatusFindsNodesStartedByHand: a node started without net up (here
// in this process) has no PID file, but holds its data directory's lock:
// Status reports it running, by hand, with its PID.
func TestStatusFindsNodesStartedByHand(t *testing.T) {
	lay, err := Generate(t.TempDir(), Spec{Orderers: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := node.LoadNode(lay.Nodes[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	if got := Status(lay)[0]; got.Alive || got.ByHand {
		t.Fatalf("%s before it starts: %+v, want stopped", got.Name, got)
	}
	o, err := node.StartOrderer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	got := Status(lay)[0]
	if !got.Alive || !got.ByHand || got.PID != os.Getpid() || !got.Reachable {
		t.Fatalf("%s started by hand: %+v, want running by hand as pid %d, reachable", got.Name, got, os.Getpid())
	}
}
