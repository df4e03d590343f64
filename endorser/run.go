package endorser

import (
	"context"
	"errors"
	"fmt"

	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/internal/gopool"
)

// outcome is how a contract call ended.
type outcome struct {
	result   []byte
	err      error
	panicked bool
	value    any // the panic value
}

// contracts runs contract calls on reused goroutines (package gopool): a
// fresh goroutine per call spent a tenth of the endorser's own CPU
// growing its stack. A contract that never returns keeps its worker.
var contracts gopool.Pool

// run invokes c on st in a goroutine of its own and waits for it, for at most
// e.timeout and no longer than ctx allows. Whatever happens, st is closed
// before run returns: a contract still running afterwards (one that never
// returns leaks its goroutine, see doc.go) finds every stub call refused.
func (e *Endorser) run(parent context.Context, c contract.Contract, st *stub) ([]byte, error) {
	ctx, cancel := context.WithTimeout(parent, e.timeout)
	defer cancel()
	done := make(chan outcome, 1) // buffered: a late contract never blocks
	contracts.Go(func() { invoke(c, st, done) })
	select {
	case o := <-done:
		st.close()
		return o.result, e.judge(st, o)
	case <-ctx.Done():
		st.close()
		what := fmt.Sprintf("contract %q function %q", st.ns, st.fn)
		if err := parent.Err(); err != nil {
			return nil, refuse(ErrTimedOut, err, fmt.Sprintf("%s was abandoned before it returned: the caller's context is done (%v)", what, err))
		}
		return nil, refuse(ErrTimedOut, ctx.Err(), fmt.Sprintf("%s timed out after %v", what, e.timeout))
	}
}

// invoke calls the contract and reports how it ended, panic and
// runtime.Goexit included.
func invoke(c contract.Contract, st *stub, done chan<- outcome) {
	var o outcome
	returned := false
	defer func() {
		if r := recover(); r != nil || !returned {
			if r == nil {
				r = "runtime.Goexit called"
			}
			o = outcome{panicked: true, value: r}
		}
		done <- o
	}()
	o.result, o.err = c.Invoke(st)
	returned = true
}

// judge turns a finished call into nil (success) or the refusal to report.
func (e *Endorser) judge(st *stub, o outcome) error {
	what := fmt.Sprintf("contract %q function %q", st.ns, st.fn)
	if o.panicked {
		return refuse(ErrPanicked, nil, fmt.Sprintf("%s panicked: %v", what, o.value))
	}
	// A failed state read fails the call whatever the contract did with
	// the error: a read missing from the set could hide a conflict.
	if err := st.stateErr(); err != nil {
		return refuse(ErrInternal, err, fmt.Sprintf("%s: reading state: %v", what, err))
	}
	if o.err == nil {
		return nil
	}
	var ce *contract.Error
	if errors.As(o.err, &ce) && ce != nil {
		r := refuse(ErrContractFailed, o.err, fmt.Sprintf("%s failed with status %d: %s", what, ce.Status, ce.Message))
		r.status = contractStatus(ce)
		return r
	}
	return refuse(ErrContractFailed, o.err, fmt.Sprintf("%s failed: %v", what, o.err))
}
