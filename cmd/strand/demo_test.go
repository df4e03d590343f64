package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDemo runs `strand demo` briefly: an embedded two-org network, with a
// streaming orderer, under Smallbank load, with its invariant and
// state-agreement checks.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	var out bytes.Buffer
	cmd := rootCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"demo", "--duration", "1s", "--accounts", "50", "--clients", "4", "--batch-mode", "stream", "--checkpoint-blocks", "4"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"created 50 accounts", "VALID", "Smallbank invariant holds", "identical state"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestDemoBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--orgs", "0"}, {"--accounts", "1"}, {"--clients", "0"}, {"--duration", "0s"}, {"--batch-timeout", "0s"}, {"--batch-mode", "fast"}} {
		cmd := rootCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetArgs(append([]string{"demo"}, args...))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("demo %v: error %v, want one naming %s", args, err, args[0])
		}
	}
}
