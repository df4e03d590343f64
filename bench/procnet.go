package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/strand-ledger/strand/localnet"
)

// StartProcesses generates a network like StartEmbedded's in a temporary
// directory and starts every node as a process of its own (command is the
// strand binary, as localnet.Up takes it), so that each node can be put
// in a cgroup and its scheduling measured apart from the load generator.
// The nodes die with this process if it dies without Close.
func StartProcesses(o NetOptions, command []string) (_ *Network, err error) {
	if o.StateDB != "" {
		return nil, fmt.Errorf("bench: state_db %q: a process network runs the nodes' own configuration (pebble); want state_db unset", o.StateDB)
	}
	if len(command) == 0 {
		return nil, fmt.Errorf("bench: a process network needs the strand binary to start its nodes (Target.Command is empty)")
	}
	dir, err := os.MkdirTemp("", "strand-bench-procs-")
	if err != nil {
		return nil, err
	}
	n := &Network{Dir: dir, keep: o.Keep, owned: true, procs: true}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	n.Layout, err = localnet.Generate(dir, o.spec())
	if err != nil {
		return nil, err
	}
	up := localnet.UpOptions{Command: command, DieWithCaller: true}
	if n.mem, err = openMemLimits(o.Disagg, n.Layout, o.Logf); err != nil {
		return nil, err
	}
	if n.mem != nil {
		up.Env, up.Started = n.mem.env(o.Disagg), n.mem.started
	}
	if _, err := localnet.Up(n.Layout, up); err != nil {
		return nil, err
	}
	if err := awaitJoined(n.Layout.Computes, joinWait); err != nil {
		return nil, err
	}
	return n, nil
}

// joinWait bounds how long StartProcesses waits for compute nodes to join
// their primaries' pools.
const joinWait = 30 * time.Second

// awaitJoined waits until every compute node is in its primary's pool
// (its /readyz answers 200): Up returns once a compute node accepts
// connections, before its Join stream is accepted, and a round's load
// must find the pool it measures. The error names each node still out
// and why.
func awaitJoined(computes []localnet.Node, wait time.Duration) error {
	c := http.Client{Timeout: 2 * time.Second}
	why := func(n localnet.Node) string {
		resp, err := c.Get("http://" + n.Metrics + "/readyz")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return ""
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	deadline := time.Now().Add(wait)
	for {
		var out []string
		for _, n := range computes {
			if w := why(n); w != "" {
				out = append(out, fmt.Sprintf("%s (%s)", n.Name, w))
			}
		}
		if len(out) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: compute nodes not in their primary's pool %v after starting: %s", wait, strings.Join(out, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
