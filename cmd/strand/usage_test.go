package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/internal/buildinfo"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

func TestVersion(t *testing.T) {
	out := mustCLI(t, "version")
	if !strings.HasPrefix(out, "strand ") || !strings.Contains(out, " commit ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("strand version = %q, want strand VERSION commit COMMIT ... %s", out, runtime.Version())
	}
	var in buildinfo.Info
	if err := json.Unmarshal([]byte(mustCLI(t, "version", "--json")), &in); err != nil || in != buildinfo.Read() {
		t.Errorf("strand version --json: %+v, %v; want %+v", in, err, buildinfo.Read())
	}
	if _, err := cli(t, "version", "extra"); err == nil {
		t.Error("strand version extra: no error")
	}
}

func TestQuorumNote(t *testing.T) {
	for n, want := range map[int]string{1: "", 3: "", 5: "",
		2: "note: --orderers 2: a Raft leader needs 2 of the 2, so 1 failing stop ordering, no more tolerant than 1; use an odd number",
		4: "a Raft leader needs 3 of the 4, so 2 failing stop ordering, no more tolerant than 3"} {
		if got := quorumNote(n); want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("quorumNote(%d) = %q, want %q", n, got, want)
		}
	}
	out := mustCLI(t, "crypto", "gen", "--dir", t.TempDir()+"/net", "--orderers", "2")
	if !strings.Contains(out, "note: --orderers 2") {
		t.Errorf("crypto gen --orderers 2 says nothing of the quorum:\n%s", out)
	}
}

// TestFlagErrors: a negative number taken for a flag says to put --
// before it; another unknown flag says where the flags are listed.
func TestFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"invoke", "create_account", "a", "A", "-5", "0"}, "-5 was read as a flag: put -- before arguments that start with a dash (`strand invoke [flags] -- ARGS...`"},
		{[]string{"query", "query", "-12.5"}, "-12.5 was read as a flag"},
		{[]string{"net", "up", "--orderes", "3"}, "unknown flag: --orderes (`strand net up --help` lists the flags)"},
		{[]string{"net", "up", "--compute", "2"}, "--compute 2 needs --memnodes: compute nodes read their peer's state from its memory node"},
		{[]string{"net", "up", "--compute", "-1", "--memnodes"}, "--compute -1: want 0 to 64 compute nodes per peer"},
		{[]string{"net", "scale", "--dir", "/nonexistent-strand-net", "--compute", "2"}, "no network in /nonexistent-strand-net"},
		{[]string{"compute", "start", "--config", "/nonexistent/compute.yaml"}, "/nonexistent/compute.yaml"},
	} {
		if _, err := cli(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("strand %s: %v, want an error containing %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// TestLedgerCheckRunningNode: ledger check refuses a node that runs,
// naming the process, instead of reading a store that is being written.
func TestLedgerCheckRunningNode(t *testing.T) {
	lay, err := localnet.Generate(filepath.Join(t.TempDir(), "net"), localnet.Spec{Orderers: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := node.LoadNode(lay.Nodes[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	o, err := node.StartOrderer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	want := fmt.Sprintf("orderer0 is running (process %d holds %s)", os.Getpid(), cfg.DataDir)
	if _, err := cli(t, "ledger", "check", "--config", lay.Nodes[0].Config); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("ledger check of a running orderer: %v, want %q", err, want)
	}
}
