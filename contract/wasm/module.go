package wasm

import (
	"context"
	"encoding/hex"

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
}

var _ contract.Contract = (*Module)(nil)

// Hash is the hex SHA-256 of the module's code.
func (m *Module) Hash() string { return hex.EncodeToString(m.hash[:]) }

// Invoke runs one call of the contract on stub.
func (m *Module) Invoke(stub contract.Stub) ([]byte, error) {
	m.e.m.calls.Add(1)
	in, err := m.get()
	if err != nil {
		return nil, err
	}
	keep := false
	defer func() {
		// Also reached by runtime.Goexit, which the endorser's stub
		// uses to end a call it abandoned.
		if keep {
			m.put(in)
		} else {
			in.close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), m.e.opts.Timeout)
	defer cancel()
	res, err, ok := in.call(ctx, stub)
	if ok {
		keep = in.reset()
	}
	m.e.m.count(err)
	return res, err
}

// get takes an idle instance or makes one.
func (m *Module) get() (*instance, error) {
	select {
	case in := <-m.idle:
		m.e.m.poolHits.Add(1)
		return in, nil
	default:
	}
	return m.instantiate()
}

// put returns a reset instance to the pool, or closes it if the pool is
// full.
func (m *Module) put(in *instance) {
	select {
	case m.idle <- in:
	default:
		in.close()
	}
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
