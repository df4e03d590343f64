package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/strand-ledger/strand/contract"
)

// instance is one instantiation of a Module. It serves one call at a time.
type instance struct {
	m      *Module
	mod    api.Module
	mem    api.Memory
	fuel   api.MutableGlobal // the fuel left to the call (FuelExport)
	invoke api.Function
	stack  [1]uint64
	snap   []byte // the memory to restore after a call
	clock0 uint64 // the virtual clock after _initialize
	lm     *linearMemory
	mapped bool // the memory maps the module's snapshot file (memory_linux.go)

	callState
}

// callState is what host functions see of the running call; begin resets
// it.
type callState struct {
	stub    contract.Stub // nil during _initialize
	pending []byte        // a value too large for the guest's buffer, or an error message (take)
	result  []byte
	failure error  // set by fail
	out     []byte // stdout and stderr, at most Options.OutputBytes
	clock   uint64 // virtual monotonic nanoseconds
	realNs  int64  // the realtime clock at clock0: the tx timestamp
	random  uint64 // random_get calls so far
	abort   error  // why a host function ended the call
	budget  int64  // the call's fuel
}

type instanceKey struct{}

// instantiate makes an instance and runs the module's _initialize (Go's
// runtime and package initialisers, C's constructors), then records the
// memory that every call will start from.
//
// _initialize (and a start function, which runs within InstantiateModule
// from the fuel global's initial value) has the engine's Fuel budget, the
// peer's default, whatever a definition sets for calls: a module is
// compiled once per code hash for every definition that names it. Its
// work is deterministic, so one whose _initialize runs out does so on
// every peer, at Compile (deploy refuses it), with ErrFuel.
func (m *Module) instantiate() (*instance, error) {
	in := &instance{m: m}
	in.clock = clockStart
	ctx, cancel := context.WithTimeout(context.Background(), m.e.opts.Timeout)
	defer cancel()
	ctx = context.WithValue(ctx, instanceKey{}, in)
	if m.e.opts.CopyOnWrite {
		ctx = experimental.WithMemoryAllocator(ctx, in.allocator())
	}
	// No start functions: _initialize is called below, once the fuel
	// global is known, so that running out of fuel is named as such.
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions()
	mod, err := m.e.rt.InstantiateModule(ctx, m.cm, cfg)
	m.e.m.instantiations.Add(1)
	if err != nil {
		return nil, fmt.Errorf("%w: instantiating (a start function's budget is the engine's fuel, %d units): %v", ErrABI, m.e.opts.Fuel, in.describe(ctx, err))
	}
	in.mod, in.mem, in.invoke = mod, mod.Memory(), mod.ExportedFunction(InvokeExport)
	fuel, ok := mod.ExportedGlobal(FuelExport).(api.MutableGlobal)
	if !ok { // meter adds it to every module
		mod.Close(ctx)
		return nil, fmt.Errorf("%w: the metered module has no mutable global %q", ErrMeter, FuelExport)
	}
	in.fuel = fuel
	if init := mod.ExportedFunction(InitExport); init != nil {
		in.budget = m.e.opts.Fuel
		fuel.Set(uint64(in.budget))
		if _, err := init.Call(ctx); err != nil {
			err = in.describe(ctx, err)
			mod.Close(ctx)
			if !errors.Is(err, ErrFuel) {
				err = fmt.Errorf("%w: %s failed: %v", ErrABI, InitExport, err)
			}
			return nil, err
		}
		in.budget = 0
	}
	in.clock0 = in.clock
	buf, _ := in.mem.Read(0, in.mem.Size())
	if m.snap != nil && bytes.Equal(buf, m.snap) {
		in.snap = m.snap // initialisation is deterministic: share
		in.mapped = in.mapSnapshot(m.file)
	} else {
		in.snap = bytes.Clone(buf)
	}
	return in, nil
}

// call runs one call. ok is false if the instance must not serve again.
func (in *instance) call(ctx context.Context, stub contract.Stub, budget int64) (res []byte, err error, ok bool) {
	in.callState = callState{stub: stub, clock: in.clock0, realNs: stub.Timestamp().UnixNano(), out: in.out[:0], budget: budget}
	ctx = context.WithValue(ctx, instanceKey{}, in)
	in.fuel.Set(uint64(budget))
	err = in.invoke.CallWithStack(ctx, in.stack[:])
	if left := int64(in.fuel.Get()); left >= 0 {
		in.m.e.m.fuel.Add(uint64(budget - left))
	} else {
		in.m.e.m.fuel.Add(uint64(budget))
	}
	if err != nil {
		return nil, in.describe(ctx, err), false
	}
	if rc := int32(in.stack[0]); rc != 0 {
		return nil, fmt.Errorf("%w: module %.12s function %q: %s returned %d, want 0", ErrABI, in.m.Hash(), stub.Function(), InvokeExport, rc), false
	}
	if in.failure != nil {
		return nil, in.failure, true
	}
	return in.result, nil, true
}

// describe turns a failed call or instantiation into its named error.
func (in *instance) describe(ctx context.Context, err error) error {
	out := ""
	if len(in.out) > 0 {
		// The first paragraph: a Go panic's message without its stacks.
		first, _, _ := strings.Cut(strings.TrimSpace(string(in.out)), "\n\n")
		out = fmt.Sprintf(" (its output: %q)", first)
	}
	// wazero's error is a line and then the wasm stack trace.
	err = errors.New(strings.TrimSpace(strings.SplitN(err.Error(), "\n", 2)[0]))
	switch {
	case in.abort != nil && errors.Is(in.abort, ErrExit) && in.outOfMemory():
		return fmt.Errorf("%w (%d pages of 64 KiB): %v%s", ErrMemory, in.m.e.opts.MemoryPages, in.abort, out)
	case in.abort != nil:
		return fmt.Errorf("%w%s", in.abort, out)
	case in.fuel != nil && int64(in.fuel.Get()) < 0 && in.stub == nil: // only the metering code traps so
		return fmt.Errorf("%w: module %.12s: its %s (Go's runtime and package inits, C's constructors) used up its budget of %d units (about one a WebAssembly instruction; the peer's default fuel, whatever the definition's)%s",
			ErrFuel, in.m.Hash(), InitExport, in.budget, out)
	case in.fuel != nil && int64(in.fuel.Get()) < 0:
		return fmt.Errorf("%w: module %.12s function %q used up its budget of %d units (about one a WebAssembly instruction; the definition's fuel, or the peer's default)%s",
			ErrFuel, in.m.Hash(), in.stub.Function(), in.budget, out)
	case ctx.Err() != nil:
		return fmt.Errorf("%w of %v: %v%s", ErrDeadline, in.m.e.opts.Timeout, ctx.Err(), out)
	case in.outOfMemory():
		return fmt.Errorf("%w (%d pages of 64 KiB): %v%s", ErrMemory, in.m.e.opts.MemoryPages, err, out)
	}
	return fmt.Errorf("%w: %v%s", ErrTrap, err, out)
}

// outOfMemory reports whether a failed call ran out of memory: its memory
// is at the cap, or its runtime said so (Go's runtime asks for 4 MiB at a
// time and exits when refused, below the cap).
func (in *instance) outOfMemory() bool {
	if bytes.Contains(in.out, []byte("out of memory")) {
		return true
	}
	return in.mod != nil && in.mem != nil && in.mem.Size() >= in.m.e.opts.MemoryPages*65536
}

// reset restores the memory the call started from. It reports false
// (the instance must be closed) if the call grew the memory: linear
// memory cannot shrink, and a guest whose allocator state is restored
// would grow it again on every call.
func (in *instance) reset() bool {
	buf, ok := in.mem.Read(0, in.mem.Size())
	if !ok || len(buf) != len(in.snap) {
		in.m.e.m.grown.Add(1)
		return false
	}
	if in.mapped {
		if !in.dropWrites() {
			return false
		}
	} else {
		restore(buf, in.snap)
	}
	in.callState = callState{out: in.out[:0]}
	return true
}

// restore makes mem equal to snap (of the same length), writing only the
// pages that differ. A Smallbank call on a Go module changes tens of its
// 992 pages of 4 KiB; comparing reads both copies but writes only those, where copying writes (and dirties the cache with) every byte:
// 89 µs against 152 µs for 4 MiB on this project's machine
// (docs/contracts.md).
func restore(mem, snap []byte) {
	const page = 4096
	for i := 0; i < len(snap); i += page {
		j := min(i+page, len(snap))
		if !bytes.Equal(mem[i:j], snap[i:j]) {
			copy(mem[i:j], snap[i:j])
		}
	}
}

func (in *instance) close() {
	if in.mod != nil {
		in.mod.Close(context.Background())
	}
}

// current is the instance whose call a host function serves.
func current(ctx context.Context) *instance {
	return ctx.Value(instanceKey{}).(*instance)
}
