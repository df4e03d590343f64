package node

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/policy"
)

// computeDefinitions keeps a compute node running the contract
// definitions committed in the state it shares with its primary.
//
// The primary's committer writes a definition transaction's records
// (lifecycle.Namespace: def/<name>, code/<hash>) through to the memory
// node with the rest of its block. The compute node's memory node client
// follows the node's change feed (memnode.ClientOptions.OnChange): a
// batch that wrote lifecycle.Namespace, or a resync, after which anything
// may have changed, wakes run, which reads every definition from the
// memory node (committer.ReadDefinitions, as the primary does at start)
// and installs the table in the endorser if it differs from the one
// installed. The contracts come from the same contractLoader as a peer's:
// code checked against the definition's hash (ErrCodeHash), wasm modules
// compiled once per hash by the engine, external contracts dialled with
// the node's own client certificate, init-first guarded (initGuard).
//
// Invariants:
//   - The endorser's contracts and their sequences are swapped together
//     (endorser.SetDefinitions), so an answer names the sequence of the
//     definition it ran. The primary's pool refuses an answer whose
//     sequence is not the primary's (gateway.Pool, Definitions): a compute
//     node behind (or ahead of) its primary is asked nothing it would
//     answer with another definition, whatever the feed's lag.
//   - A wake-up arriving while run installs is kept (kick holds one), so
//     the last install reads the state after the last change notified.
type computeDefinitions struct {
	state    committer.Scanner
	genesis  map[string]*policy.Policy // the channel file's contracts
	loader   *contractLoader
	e        *endorser.Endorser
	log      *slog.Logger
	kick     chan struct{}                   // buffered 1: a change to read
	table    atomic.Pointer[lifecycle.Table] // installed; only run (and start) store it
	installs atomic.Uint64                   // tables installed after the first
	failures atomic.Uint64                   // reads of the definitions that failed
}

func newComputeDefinitions(genesis map[string]*policy.Policy, log *slog.Logger) *computeDefinitions {
	return &computeDefinitions{genesis: genesis, log: log, kick: make(chan struct{}, 1)}
}

// changed is the memory node client's OnChange: it wakes run when the
// batch wrote definitions, or on a resync (namespaces nil). It never
// blocks.
func (d *computeDefinitions) changed(_ uint64, namespaces []string) {
	if namespaces != nil && !slices.Contains(namespaces, lifecycle.Namespace) {
		return
	}
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// read returns the definitions in the state now, reusing the installed
// table when nothing differs.
func (d *computeDefinitions) read() (*lifecycle.Table, error) {
	defs, err := committer.ReadDefinitions(d.state)
	if err != nil {
		return nil, err
	}
	t := lifecycle.NewTable(d.genesis, defs)
	if cur := d.table.Load(); cur != nil && sameTable(cur, t) {
		return cur, nil
	}
	return t, nil
}

// install reads the definitions and installs them if they changed; it
// reports whether it did.
func (d *computeDefinitions) install() (bool, error) {
	t, err := d.read()
	if err != nil {
		d.failures.Add(1)
		return false, err
	}
	if t == d.table.Load() {
		return false, nil
	}
	if err := d.e.SetDefinitions(d.loader.load(t)); err != nil {
		return false, fmt.Errorf("node: installing contract definitions in the endorser: %w", err)
	}
	d.table.Store(t)
	return true, nil
}

// run installs definitions as the feed tells of them, until ctx ends. A
// read that fails (the memory node unreachable) is tried again after
// retry; meanwhile the definitions installed stay, and the pool judges
// answers by their sequence.
func (d *computeDefinitions) run(ctx context.Context, retry time.Duration) {
	var again <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.kick:
		case <-again:
		}
		again = nil
		changed, err := d.install()
		switch {
		case err != nil:
			d.log.Warn("reading contract definitions from the memory node; trying again", "err", err, "retryIn", retry)
			again = time.After(retry)
		case changed:
			d.installs.Add(1)
			d.log.Info("contract definitions installed", "contracts", len(d.table.Load().Names()))
		}
	}
}

// sameTable reports whether a and b hold the same definitions.
func sameTable(a, b *lifecycle.Table) bool {
	if a.Len() != b.Len() {
		return false
	}
	for _, name := range a.Names() {
		ea, _ := a.Get(name)
		eb, ok := b.Get(name)
		if !ok || ea.Sequence != eb.Sequence || (ea.Def == nil) != (eb.Def == nil) || (ea.Def != nil && !bytes.Equal(ea.Def.Raw, eb.Def.Raw)) {
			return false
		}
	}
	return true
}
