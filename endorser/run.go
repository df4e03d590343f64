package endorser

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

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
// growing its stack.
var contracts gopool.Pool

// A call that outlives its deadline is abandoned: run answers 504 and the
// call's goroutine is overdue until it ends. Go cannot stop a goroutine
// from outside, so strand bounds what an overdue call can hold:
//
//   - Its first stub call after the deadline ends its goroutine
//     (runtime.Goexit, which a contract cannot recover from; its deferred
//     calls run). A contract that loops over state, the usual runaway,
//     is therefore reclaimed at once.
//   - One that never calls its stub again (a pure CPU loop, a blocked
//     channel) keeps its goroutine; while a contract has MaxOverdue such
//     calls, the endorser refuses its new proposals at once
//     (ErrQuarantined, 503) instead of starting more. So one broken
//     contract holds at most MaxOverdue goroutines, and the endorser's
//     capacity for every other contract is untouched. The quarantine
//     lifts by itself when an overdue call ends.
//
// callRunning, callFinished and callAbandoned are a call's states: run and
// the call's goroutine each try one transition from callRunning, and the
// one that loses knows the other's outcome.
const (
	callRunning int32 = iota
	callFinished
	callAbandoned
)

// call is one contract invocation shared by run and its goroutine.
type call struct {
	state   atomic.Int32
	done    chan outcome  // buffered: a late contract never blocks
	overdue *atomic.Int64 // the contract's count of overdue calls
}

// run invokes c on st in a goroutine of its own and waits for it, for at most
// e.timeout and no longer than ctx allows. Whatever happens, st is closed
// before run returns, so a contract still running afterwards cannot change
// the judged read/write set, and its next stub call ends it.
func (e *Endorser) run(parent context.Context, c contract.Contract, st *stub) ([]byte, error) {
	overdue := e.contracts.Load().overdue[st.ns]
	if overdue == nil { // cannot happen: contracts are added or replaced, never removed
		overdue = new(atomic.Int64)
	}
	if n := overdue.Load(); n >= int64(e.maxOverdue) {
		return nil, refuse(ErrQuarantined, nil, fmt.Sprintf("contract %q has %d calls still running after their %v deadline (the bound is %d); "+
			"it gets no new calls until one ends: the contract does not return, fix it and restart the peer", st.ns, n, e.timeout, e.maxOverdue))
	}
	ctx, cancel := context.WithTimeout(parent, e.timeout)
	defer cancel()
	k := &call{done: make(chan outcome, 1), overdue: overdue}
	contracts.Go(func() { invoke(c, st, k) })
	select {
	case o := <-k.done:
		st.close()
		return o.result, e.judge(st, o)
	case <-ctx.Done():
	}
	overdue.Add(1) // before the transition, so that the goroutine's Add(-1) follows it
	if !k.state.CompareAndSwap(callRunning, callAbandoned) {
		overdue.Add(-1) // it finished just now: judge it after all
		o := <-k.done
		st.close()
		return o.result, e.judge(st, o)
	}
	st.abandon()
	what := fmt.Sprintf("contract %q function %q", st.ns, st.fn)
	if err := parent.Err(); err != nil {
		return nil, refuse(ErrTimedOut, err, fmt.Sprintf("%s was abandoned before it returned: the caller's context is done (%v)", what, err))
	}
	return nil, refuse(ErrTimedOut, ctx.Err(), fmt.Sprintf("%s timed out after %v", what, e.timeout))
}

// invoke calls the contract and reports how it ended, panic and
// runtime.Goexit (an abandoned call's stub ends it so) included.
func invoke(c contract.Contract, st *stub, k *call) {
	var o outcome
	returned := false
	defer func() {
		if r := recover(); r != nil || !returned {
			if r == nil {
				r = "runtime.Goexit called"
			}
			o = outcome{panicked: true, value: r}
		}
		if !k.state.CompareAndSwap(callRunning, callFinished) {
			k.overdue.Add(-1) // abandoned: no longer overdue
		}
		k.done <- o
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
		return stateRefusal(what, err)
	}
	if o.err == nil {
		return nil
	}
	var ce *contract.Error
	if errors.As(o.err, &ce) && ce != nil {
		// The contract's reason, named by contract.function only: the
		// gateway and the client add where and which tx.
		r := refuse(ErrContractFailed, o.err, fmt.Sprintf("%s.%s: %s", st.ns, st.fn, ce.Message))
		if r.status = contractStatus(ce); r.status != int32(ce.Status) {
			r.msg += fmt.Sprintf(" (the contract's status %d is no error status; answered as %d)", ce.Status, r.status)
		}
		return r
	}
	return refuse(ErrContractFailed, o.err, fmt.Sprintf("%s.%s: %v", st.ns, st.fn, o.err))
}
