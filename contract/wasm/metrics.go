package wasm

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Metrics counts an engine's work since it started.
type Metrics struct {
	Compiles       uint64 `metric:"counter"` // WebAssembly modules compiled.
	CacheHits      uint64 `metric:"counter"` // Compiles answered from the module cache (same code hash).
	CompileErrors  uint64 `metric:"counter"` // Module codes refused at compile (invalid, refused imports, no ABI exports).
	Instantiations uint64 `metric:"counter"` // Instances made (each runs _initialize).
	PoolHits       uint64 `metric:"counter"` // Calls served by a pooled instance.
	Waits          uint64 `metric:"counter"` // Calls that waited for an instance: all Pool instances of the module were busy.
	Grown          uint64 `metric:"counter"` // Instances dropped because a call grew their memory.
	Calls          uint64 `metric:"counter"` // Contract calls.
	Fuel           uint64 `metric:"counter"` // Fuel units used by calls (about one a WebAssembly instruction run).
	// Calls that failed, by kind: trap, fuel, exit, refused (a refused WASI
	// call), memory_cap, deadline, bad_call (an ABI breach); a contract's
	// own error is none of them.
	Traps      uint64 `metric:"counter,family=failed,kind=trap"`
	FuelOuts   uint64 `metric:"counter,family=failed,kind=fuel"`       // the call used up its fuel budget
	Exits      uint64 `metric:"counter,family=failed,kind=exit"`       // the module exited (proc_exit)
	Refused    uint64 `metric:"counter,family=failed,kind=refused"`    // a refused WASI call (files, sockets, signals)
	MemoryCaps uint64 `metric:"counter,family=failed,kind=memory_cap"` // the memory cap was hit
	Deadlines  uint64 `metric:"counter,family=failed,kind=deadline"`   // the call's deadline passed
	BadCalls   uint64 `metric:"counter,family=failed,kind=bad_call"`   // an ABI breach
}

func (m Metrics) String() string {
	return fmt.Sprintf("wasm: %d calls (%d on pooled instances, %d waited for one), %d instantiations, %d dropped for growing; "+
		"%d fuel; %d compiles, %d cache hits, %d refused codes; failures: %d traps, %d out of fuel, %d exits, %d refused imports, %d memory caps, %d deadlines, %d ABI breaches",
		m.Calls, m.PoolHits, m.Waits, m.Instantiations, m.Grown, m.Fuel, m.Compiles, m.CacheHits, m.CompileErrors,
		m.Traps, m.FuelOuts, m.Exits, m.Refused, m.MemoryCaps, m.Deadlines, m.BadCalls)
}

type counters struct {
	compiles, cacheHits, compileErrors, instantiations, poolHits, waits, grown, calls, fuel atomic.Uint64
	traps, fuelOuts, exits, refused, memoryCaps, deadlines, badCalls                        atomic.Uint64
}

// count records a call's failure by kind.
func (c *counters) count(err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrMemory):
		c.memoryCaps.Add(1)
	case errors.Is(err, ErrFuel):
		c.fuelOuts.Add(1)
	case errors.Is(err, ErrTrap):
		c.traps.Add(1)
	case errors.Is(err, ErrExit):
		c.exits.Add(1)
	case errors.Is(err, ErrRefused):
		c.refused.Add(1)
	case errors.Is(err, ErrDeadline):
		c.deadlines.Add(1)
	case errors.Is(err, ErrBadCall), errors.Is(err, ErrABI):
		c.badCalls.Add(1)
	}
}

// Metrics returns a snapshot of the engine's counters.
func (e *Engine) Metrics() Metrics {
	c := &e.m
	return Metrics{
		Compiles: c.compiles.Load(), CacheHits: c.cacheHits.Load(), CompileErrors: c.compileErrors.Load(),
		Instantiations: c.instantiations.Load(), PoolHits: c.poolHits.Load(), Waits: c.waits.Load(), Grown: c.grown.Load(), Calls: c.calls.Load(),
		Fuel: c.fuel.Load(), Traps: c.traps.Load(), FuelOuts: c.fuelOuts.Load(), Exits: c.exits.Load(), Refused: c.refused.Load(), MemoryCaps: c.memoryCaps.Load(),
		Deadlines: c.deadlines.Load(), BadCalls: c.badCalls.Load(),
	}
}
