package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeExe: STRAND_EXE names the binary strand starts as its nodes,
// and one that is not there is an error naming it; unset, it is this one.
func TestNodeExe(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "strand-old")
	t.Setenv(exeEnv, missing)
	if _, err := nodeExe("the nodes"); err == nil || !strings.Contains(err.Error(), "STRAND_EXE="+missing+", the binary to run the nodes") {
		t.Fatalf("nodeExe with a missing STRAND_EXE = %v, want an error naming it", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(exeEnv, self)
	if got, err := nodeExe("the nodes"); err != nil || got != self {
		t.Fatalf("nodeExe = %q, %v; want %q", got, err, self)
	}
	t.Setenv(exeEnv, "")
	if got, err := nodeExe("the nodes"); err != nil || got != self {
		t.Fatalf("nodeExe without STRAND_EXE = %q, %v; want this binary %q", got, err, self)
	}
}
