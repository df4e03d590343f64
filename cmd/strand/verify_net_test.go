package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestNetVerifyExitCode runs `strand net verify` as a process of its own
// (this test binary standing in for strand) against a network of real
// processes: it exits 0 when every node is up and agrees; with peer0.Org2
// SIGKILLed it exits non-zero, naming the peer and why, after its settle
// period; restarted and behind (blocks committed while it was down), the
// peer catches up within the settle period and verify exits 0 again.
func TestNetVerifyExitCode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network of processes")
	}
	dir, lay := generateTwoPolicyNet(t)
	mustCLI(t, "net", "up", "--dir", dir)
	pids := readPIDs(t, lay)
	c1 := netConnect(t, lay, "Org1", "")
	kv := c1.Contract("kv")
	ctx := t.Context()
	for i := range 3 {
		if _, err := kv.Submit(ctx, "insert", fmt.Sprintf("k%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if out, code := netVerifyProc(t, dir, "10s"); code != 0 || !strings.Contains(out, "all 3 nodes answered, every block checks") {
		t.Fatalf("net verify with every node up: exit %d\n%s", code, out)
	}

	p2, _ := lay.Node("peer0.Org2")
	victim := pids[p2.Name]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	netWaitGone(t, victim)
	for i := range 20 { // blocks peer0.Org2 will have to catch up on
		if _, err := kv.Submit(ctx, "insert", fmt.Sprintf("down%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	out, code := netVerifyProc(t, dir, "500ms")
	t.Logf("net verify with peer0.Org2 down: exit %d\n%s", code, out)
	if code == 0 || !strings.Contains(out, "node did not answer: peer peer0.Org2 at "+p2.Address) {
		t.Fatalf("net verify with peer0.Org2 SIGKILLed: exit %d, want non-zero naming peer0.Org2 as not answering\n%s", code, out)
	}

	mustCLI(t, "net", "up", "--dir", dir)
	if out, code := netVerifyProc(t, dir, "30s"); code != 0 {
		t.Fatalf("net verify after peer0.Org2 restarted: exit %d\n%s", code, out)
	}
}

// netVerifyProc runs `strand net verify --dir dir --settle settle` as a
// child process and returns its output (stdout and stderr) and exit code.
func netVerifyProc(t *testing.T, dir, settle string) (string, int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(t.Context(), exe, "net", "verify", "--dir", dir, "--settle", settle)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), 0
}
