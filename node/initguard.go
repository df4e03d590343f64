package node

import (
	"strconv"

	"github.com/strand-ledger/strand/contract"
)

// InitKey is the key, in a contract's own namespace, where the sequence of
// the definition whose init function ran is kept (decimal).
const InitKey = "_strand_init"

// initGuard makes a definition's init function its contract's first call
// (Fabric's init-required): until init succeeds under the definition's
// sequence every other function is refused, and init runs once per
// sequence (an upgrade that names init runs it again).
//
// Invariant: the guard reads InitKey through the endorser's stub, so the
// read is in every call's read set, and init writes it: two inits
// endorsed on the same state conflict at validation (MVCC), so init takes
// effect at most once per sequence.
type initGuard struct {
	c    contract.Contract
	name string
	init string
	seq  string // the definition's sequence, as InitKey holds it
}

func newInitGuard(c contract.Contract, name, init string, seq uint64) initGuard {
	return initGuard{c: c, name: name, init: init, seq: strconv.FormatUint(seq, 10)}
}

func (g initGuard) Invoke(stub contract.Stub) ([]byte, error) {
	v, err := stub.GetState(InitKey)
	if err != nil {
		return nil, err
	}
	done, fn := string(v) == g.seq, stub.Function()
	switch {
	case fn == g.init && done:
		return nil, contract.Statusf(409, "contract %s (sequence %s): its init function %q already ran; it runs once per definition", g.name, g.seq, g.init)
	case fn != g.init && !done:
		return nil, contract.Statusf(412, "contract %s (sequence %s): %q refused: its definition names init function %q, which must be its first call (strand contract deploy --init runs it)", g.name, g.seq, fn, g.init)
	case fn != g.init:
		return g.c.Invoke(stub)
	}
	out, err := g.c.Invoke(stub)
	if err != nil {
		return nil, err
	}
	if err := stub.PutState(InitKey, []byte(g.seq)); err != nil {
		return nil, err
	}
	return out, nil
}
