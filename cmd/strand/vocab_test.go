package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/node"
)

// TestVocabulary: every command that takes a shared knob names it the
// same, with the same type and default (cmd/strand/vocab.go).
func TestVocabulary(t *testing.T) {
	want := map[string]struct{ typ, def string }{
		flagBlockSize:    {"int", "100"},
		flagBatchTimeout: {"duration", "2ms"},
		flagBatchMode:    {"string", "block"},
		flagStateDB:      {"string", "pebble"},
		flagSeed:         {"uint64", "1"},
	}
	seen := map[string]int{}
	for _, path := range [][]string{{"demo"}, {"bench", "run"}, {"bench", "validator"}, {"crypto", "gen"}, {"net", "up"}} {
		cmd, _, err := rootCmd().Find(path)
		if err != nil {
			t.Fatal(err)
		}
		for name, w := range want {
			f := cmd.Flags().Lookup(name)
			if f == nil {
				continue
			}
			seen[name]++
			if strings.Join(path, " ") == "bench validator" && name == flagBlockSize {
				continue // a list to sweep, of the same name
			}
			if f.Value.Type() != w.typ || f.DefValue != w.def {
				t.Errorf("strand %s --%s: %s, default %q; want %s, default %q", strings.Join(path, " "), name, f.Value.Type(), f.DefValue, w.typ, w.def)
			}
		}
	}
	for name := range want {
		if seen[name] < 2 {
			t.Errorf("--%s is bound by %d commands: a shared knob should be bound by those that take it", name, seen[name])
		}
	}
}

// TestDeprecatedFlagNames: the old names still work, and say so.
func TestDeprecatedFlagNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	var out, errOut bytes.Buffer
	cmd := rootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"crypto", "gen", "--dir", dir, "--orderers", "1", "--batch-max-txs", "7"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	ch, err := node.LoadChannel(filepath.Join(dir, "channel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Batch.MaxTxs != 7 || ch.Batch.Timeout.String() != "2ms" {
		t.Errorf("batch %+v: want maxTxs 7 from --batch-max-txs and the 2ms default", ch.Batch)
	}
	if !strings.Contains(out.String()+errOut.String(), "--batch-max-txs has been deprecated, use --block-size") {
		t.Errorf("no deprecation notice:\n%s%s", out.String(), errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "nodes", "peer0.Org1.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"crypto", "gen", "--dir", t.TempDir(), "--state-db", "memnode"},
		{"crypto", "gen", "--dir", t.TempDir(), "--state-db", "leveldb", "--memnodes"},
		{"crypto", "gen", "--dir", t.TempDir(), "--batch-mode", "fast"},
		{"crypto", "gen", "--dir", t.TempDir(), "--block-size", "0"},
	} {
		cmd := rootCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(args)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}
