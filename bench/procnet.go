package bench

import (
	"fmt"
	"os"

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
	n.Layout, err = localnet.Generate(dir, o.Disagg.spec(localnet.Spec{Orgs: o.Orgs, ClientsPerOrg: o.ClientsPerOrg, Batch: o.Batch, Wasm: o.Wasm}))
	if err != nil {
		return nil, err
	}
	if _, err := localnet.Up(n.Layout, localnet.UpOptions{Command: command, DieWithCaller: true}); err != nil {
		return nil, err
	}
	return n, nil
}
