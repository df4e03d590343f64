package wasm

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/tetratelabs/wazero"

	"github.com/strand-ledger/strand/contract"
)

// Module is a compiled contract: a contract.Contract whose calls run on
// pooled instances of the module.
//
// Invariant: every call starts from the same instance state, the one
// _initialize left (memory snapshot, virtual clock), so no call sees
// another's memory and a call's outcome depends only on its stub. An
// instance that cannot be brought back to that state exactly (it failed,
// grew its memory, or its call was abandoned) is closed, never pooled.
type Module struct {
	e    *Engine
	hash [32]byte
	cm   wazero.CompiledModule
	snap []byte         // memory after _initialize, shared by the instances
	file *snapshotFile  // snap for instances to map; nil: they copy it
	idle chan *instance // the pool; an instance in it is reset
	// live holds a token per instance that exists (idle or serving a
	// call), at most Options.Pool: a call finding none idle makes one if
	// there is room and otherwise waits for one. Making an instance costs
	// milliseconds for a Go module (its runtime's start), far more than
	// waiting for a call to end, and more instances than cores buy no
	// throughput: calls are CPU-bound.
	live chan struct{}
}

var _ contract.Contract = (*Module)(nil)

// Hash is the hex SHA-256 of the module's code.
func (m *Module) Hash() string { return hex.EncodeToString(m.hash[:]) }

// Invoke runs one call of the contract on stub, with the engine's fuel
// budget (Options.Fuel).
func (m *Module) Invoke(stub contract.Stub) ([]byte, error) { return m.invoke(stub, m.e.opts.Fuel) }

// WithFuel returns the module as a contract whose calls have a budget of
// fuel units (1 to MaxFuel; 0 leaves the engine's), as a contract
// definition may set.
func (m *Module) WithFuel(fuel int64) (contract.Contract, error) {
	switch {
	case fuel == 0:
		return m, nil
	case fuel < 0 || fuel > MaxFuel:
		return nil, fmt.Errorf("%w: fuel %d, want 1 to 2^62 units a call", ErrBadOptions, fuel)
	}
	return metered{m, fuel}, nil
}

// metered is a module with its own fuel budget.
type metered struct {
	m    *Module
	fuel int64
}

func (c metered) Invoke(stub contract.Stub) ([]byte, error) { return c.m.invoke(stub, c.fuel) }

func (m *Module) invoke(stub contract.Stub, fuel int64) ([]byte, error) {
	m.e.m.calls.Add(1)
	// One deadline bounds the wait for an instance and the call.
	ctx, cancel := context.WithTimeout(context.Background(), m.e.opts.Timeout)
	defer cancel()
	in, err := m.get(ctx)
	if err != nil {
		m.e.m.count(err)
		return nil, err
	}
	keep := false
	defer func() {
		// Also reached by runtime.Goexit, which the endorser's stub
		// uses to end a call it abandoned.
		if keep {
			m.put(in)
		} else {
			m.drop(in)
		}
	}()
	res, err, ok := in.call(ctx, stub, fuel)
	if ok {
		keep = in.reset()
	}
	m.e.m.count(err)
	return res, err
}

// get takes an idle instance, makes one if fewer than Options.Pool
// exist, or waits for one until ctx is done.
func (m *Module) get(ctx context.Context) (*instance, error) {
	select {
	case in := <-m.idle:
		m.e.m.poolHits.Add(1)
		return in, nil
	default:
	}
	select {
	case in := <-m.idle:
		m.e.m.poolHits.Add(1)
		return in, nil
	case m.live <- struct{}{}:
	default:
		m.e.m.waits.Add(1)
		select {
		case in := <-m.idle:
			m.e.m.poolHits.Add(1)
			return in, nil
		case m.live <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w of %v: all %d instances of module %.12s stayed busy", ErrDeadline, m.e.opts.Timeout, m.e.opts.Pool, m.Hash())
		}
	}
	in, err := m.instantiate()
	if err != nil {
		<-m.live
		return nil, err
	}
	return in, nil
}

// put returns a reset instance to the pool. There is always room: the
// pool holds at most the live instances.
func (m *Module) put(in *instance) { m.idle <- in }

// drop closes an instance that must not serve again, making room for
// another.
func (m *Module) drop(in *instance) {
	in.close()
	<-m.live
}

// close closes the idle instances and the compiled module.
func (m *Module) close() {
	for {
		select {
		case in := <-m.idle:
			in.close()
		default:
			m.file.close()
			m.cm.Close(context.Background())
			return
		}
	}
}
