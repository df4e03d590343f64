package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNetChannels runs `net up --channels 2` as real processes (this
// test binary standing in for strand): one peer process serving demo and
// demo2, both ordered by one orderer process; invoke, query and events
// address a channel with --channel (the network's first by default), and
// an unknown channel is refused by name.
func TestNetChannels(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network of processes")
	}
	dir := filepath.Join(t.TempDir(), "net")
	up := mustCLI(t, "net", "up", "--dir", dir, "--channels", "2", "--orgs", "1", "--orderers", "1")
	t.Cleanup(func() { cli(t, "net", "down", "--dir", dir) })
	if strings.Contains(up, "orderer-demo2") {
		t.Fatalf("net up --channels 2 started an orderer of demo2's own; want orderer0 to order both:\n%s", up)
	}
	if out := mustCLI(t, "invoke", "--dir", dir, "create_account", "a", "A", "7", "0"); !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke on demo:\n%s", out)
	}
	if out := mustCLI(t, "invoke", "--dir", dir, "--channel", "demo2", "create_account", "b", "B", "9", "0"); !strings.Contains(out, "code    VALID") {
		t.Fatalf("invoke on demo2:\n%s", out)
	}
	if out := mustCLI(t, "query", "--dir", dir, "--channel", "demo2", "query", "b"); !strings.Contains(out, `"checking":9`) {
		t.Errorf("query b on demo2: %s", out)
	}
	for _, tc := range []struct{ channel, account, want string }{
		{"demo", "b", `account "b" does not exist`},
		{"demo2", "a", `account "a" does not exist`},
		{"nope", "a", `gateway: unknown channel "nope": this peer serves channel(s) demo, demo2`},
	} {
		if _, err := cli(t, "query", "--dir", dir, "--channel", tc.channel, "query", tc.account); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("query %s on %s: %v, want an error with %q", tc.account, tc.channel, err, tc.want)
		}
	}
	if out := mustCLI(t, "channel", "list", "--dir", dir); out != "demo\ndemo2\n" {
		t.Errorf("channel list: %q, want demo and demo2", out)
	}
	out := mustCLI(t, "events", "--dir", dir, "--channel", "demo2")
	if !strings.Contains(out, "block 1 ") {
		t.Errorf("events of demo2 lack block 1:\n%s", out)
	}
	mustCLI(t, "net", "down", "--dir", dir)
}
